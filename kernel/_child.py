"""What runs inside a sandbox child: the overlay import hook, the snippet, the pytest plugin.

This module is loaded by file path under a private name in the template process and in
pytest-xdist workers, so that a sandbox child never imports `liveforge` itself (the project
under test may be liveforge, and its modules must come from the overlay). It therefore uses
the standard library only.

The child serves every overlay module from memory through `OverlayFinder`, placed first on
`sys.meta_path`. Each source is registered in `linecache` *before* it is compiled and
executed, so tracebacks and `inspect.getsource` show the in-memory text (forwardpy recognises a
stub method only when `inspect.getsource` works on it).
"""

from __future__ import annotations

import ast
import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import json
import linecache
import os
import signal
import sys
import traceback
import types
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

OVERLAY_MANIFEST = "overlay.json"
OVERLAY_ENV = "LIVEFORGE_SANDBOX_OVERLAY"
JUNIT = "junit.xml"
REPR_LIMIT = 10_000
MESSAGE_LIMIT = 2_000


@dataclass(frozen=True)
class OverlayModule:
    """One unpersisted module carried into a sandbox run.

    `filename` is the real `.py` path of a file-backed module (a package's `__init__.py`), or a
    pseudo filename such as ``"<liveforge:pkg.mod>"`` for a virtual module.
    """

    name: str
    source: str
    filename: str
    is_package: bool = False
    virtual: bool = False

    @classmethod
    def new_virtual(cls, name: str, source: str, *, is_package: bool = False) -> OverlayModule:
        """A module that exists only in memory, with the conventional pseudo filename."""
        return cls(name, source, f"<liveforge:{name}>", is_package=is_package, virtual=True)


def register_source(filename: str, source: str) -> None:
    """Make `source` what linecache (tracebacks, inspect) returns for `filename`."""
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(source), None, lines, filename)


def compile_source(
    source: str | ast.Module | ast.Expression, filename: str, mode: str
) -> types.CodeType:
    """`compile`, with a SyntaxError showing the in-memory line, not the file on disk."""
    __tracebackhide__ = True
    try:
        return compile(source, filename, mode, dont_inherit=True)
    except SyntaxError as exc:
        text = linecache.getline(filename, exc.lineno or 0)
        if text:
            exc.text = text
        raise


def save_overlay(modules: Iterable[OverlayModule], folder: Path) -> Path:
    """Write the overlay as `overlay/<name>.py` files plus an `overlay.json` manifest."""
    sources = folder / "overlay"
    sources.mkdir(parents=True, exist_ok=True)
    entries = []
    for module in modules:
        stored = sources / f"{module.name}.py"
        stored.write_text(module.source, encoding="utf-8")
        entry = asdict(module)
        entry["source"] = f"overlay/{stored.name}"
        entries.append(entry)
    manifest = folder / OVERLAY_MANIFEST
    manifest.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    return manifest


def load_overlay(manifest: Path) -> list[OverlayModule]:
    """Read an overlay written by `save_overlay`."""
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    folder = manifest.parent
    modules = []
    for entry in entries:
        entry["source"] = (folder / entry["source"]).read_text(encoding="utf-8")
        modules.append(OverlayModule(**entry))
    return modules


class OverlayFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the overlay's modules from memory, ahead of every other finder."""

    liveforge_overlay = True

    def __init__(self, modules: Iterable[OverlayModule]) -> None:
        self.modules = {module.name: module for module in modules}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        module = self.modules.get(fullname)
        if module is None:
            return None
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=module.filename, is_package=module.is_package
        )
        assert spec is not None
        if module.is_package:
            real_dir = [] if module.virtual else [str(Path(module.filename).parent)]
            spec.submodule_search_locations = real_dir
        spec.has_location = not module.virtual
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        entry = self.modules[module.__name__]
        if entry.virtual:
            module.__file__ = entry.filename
        __tracebackhide__ = True  # pytest: the import machinery is not the test's business
        register_source(entry.filename, entry.source)
        code = compile_source(entry.source, entry.filename, "exec")
        exec(code, module.__dict__)

    def get_source(self, fullname: str) -> str:
        return self.modules[fullname].source


def install_overlay(modules: Iterable[OverlayModule]) -> OverlayFinder:
    """Put an `OverlayFinder` first on `sys.meta_path` (once per process) and return it."""
    for finder in sys.meta_path:
        if getattr(finder, "liveforge_overlay", False):
            return finder  # type: ignore[return-value]
    finder = OverlayFinder(modules)
    for module in finder.modules.values():
        register_source(module.filename, module.source)
    sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()
    return finder


def install_overlay_from_env() -> None:
    """Install the overlay named by the environment (used by pytest-xdist workers)."""
    manifest = os.environ.get(OVERLAY_ENV)
    if manifest:
        install_overlay(load_overlay(Path(manifest)))


def overlay_first() -> None:
    """Move the overlay finder back to the front (pytest inserts its own import hook there)."""
    for finder in list(sys.meta_path):
        if getattr(finder, "liveforge_overlay", False):
            sys.meta_path.remove(finder)
            sys.meta_path.insert(0, finder)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated {len(text) - limit} characters]"


def _exception_info(exc: BaseException) -> dict[str, Any]:
    """Type, message and a traceback without the sandbox's and the import system's frames."""
    kind = type(exc)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else (f"{kind.__module__}.{kind.__qualname__}")
    )
    report = traceback.TracebackException(kind, exc, exc.__traceback__)
    pending: list[traceback.TracebackException | None] = [report]
    while pending:
        current = pending.pop()
        if current is None:
            continue
        current.stack = traceback.StackSummary.from_list(
            [frame for frame in current.stack if not _machinery(frame.filename)]
        )
        pending += [current.__cause__, current.__context__]
    return {
        "exc_type": name,
        "exc_message": _clip(str(exc), MESSAGE_LIMIT),
        "traceback": _clip("".join(report.format()), 50_000),
    }


_LIMITS = str(Path(__file__).with_name("_limits.py"))


def _machinery(filename: str) -> bool:
    """Frames of the sandbox itself: this file, the counting of process starts, imports."""
    return filename in (__file__, _LIMITS) or filename.startswith("<frozen importlib")


def _safe_repr(value: object) -> str:
    try:
        return _clip(repr(value), REPR_LIMIT)
    except Exception as exc:  # a broken __repr__ must not lose the run's result
        return f"<repr failed: {type(exc).__name__}: {exc}>"


def run_snippet(code: str, filename: str, memory_mb: int | None) -> dict[str, Any]:
    """Execute `code` like a REPL cell: the value of a final expression is reported."""
    register_source(filename, code)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    try:
        tree = ast.parse(code, filename)  # a SyntaxError carries the snippet's own line
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = compile_source(tree, filename, "exec")
        exec(body, main.__dict__)
        value = None
        if isinstance(last, ast.Expr):
            tail = compile_source(ast.Expression(last.value), filename, "eval")
            value = eval(tail, main.__dict__)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are results too
        status = "failed" if isinstance(exc, AssertionError) else "error"
        if isinstance(exc, MemoryError) and memory_mb is not None:
            status = "killed_memory"
        return {"status": status, **_exception_info(exc)}
    return {"status": "passed", "value_repr": None if last is None else _safe_repr(value)}


class PytestCollector:
    """A pytest plugin that counts outcomes the way pytest's summary line does and keeps a
    short message per failure. Subtests (pytest >= 9, or the pytest-subtests plugin) are
    counted apart from tests: a test whose subtests failed counts as one failed test, and
    each failed subtest as one failed subtest."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(COUNT_KEYS, 0)
        self.failures: list[dict[str, str]] = []
        self._failed_subtests: dict[str, int] = {}

    def pytest_load_initial_conftests(self) -> None:
        overlay_first()

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.counts["errors"] += 1
            self._failure(report, "collect")
        elif report.skipped:
            self.counts["skipped"] += 1

    def pytest_runtest_logreport(self, report: Any) -> None:
        if not getattr(report, "count_towards_summary", True):
            return
        if report.when != "call":
            if report.failed:
                self.counts["errors"] += 1
                self._failure(report, report.when)
            elif report.skipped:
                self.counts["skipped"] += 1
            return
        subtest = type(report).__name__ == "SubtestReport"
        outcome = _call_outcome(report)
        if subtest:
            self.counts["subtests_" + outcome] += 1
            if outcome == "failed":
                self._failed_subtests[report.nodeid] = (
                    self._failed_subtests.get(report.nodeid, 0) + 1
                )
                self._failure(report, "subtest")
            return
        if outcome == "passed" and self._failed_subtests.pop(report.nodeid, 0):
            outcome = "failed"  # pytest fails a test whose subtests failed
        self.counts[outcome] += 1
        if report.failed:
            self._failure(report, "call")

    def _failure(self, report: Any, when: str) -> None:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = getattr(crash, "message", None) or ""
        if not message:
            lines = [line for line in str(report.longrepr or "").splitlines() if line.strip()]
            message = lines[-1] if lines else "failed"
        self.failures.append(
            {"nodeid": report.nodeid, "when": when, "message": _clip(message, 500)}
        )


COUNT_KEYS = (
    "passed",
    "failed",
    "errors",
    "skipped",
    "xfailed",
    "xpassed",
    "subtests_passed",
    "subtests_failed",
    "subtests_skipped",
    "subtests_xfailed",
    "subtests_xpassed",
)


def _call_outcome(report: Any) -> str:
    """passed, failed, skipped, xfailed or xpassed: the call phase of a test or subtest."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed" if report.passed else "failed"
    return str(report.outcome)


PYTEST_STATUS = {0: "passed", 1: "failed", 5: "error"}


def run_pytest(args: list[str], scratch: Path) -> dict[str, Any]:
    """Run pytest in-process with the given arguments; its junit XML and cache go to the
    scratch folder (not the project, which a check may not see writable)."""
    import pytest

    # pytest-xdist starts local workers with the sys.path it saw when it was imported (in the
    # template, perhaps long ago); give them this run's.
    workermanage = sys.modules.get("xdist.workermanage")
    if isinstance(getattr(workermanage, "_sys_path", None), list):
        workermanage._sys_path[:] = sys.path  # type: ignore[union-attr]
    collector = PytestCollector()
    full_args = [*args, f"--junitxml={scratch / JUNIT}"]
    if "no:cacheprovider" not in args:
        full_args += ["-o", f"cache_dir={scratch / '.pytest_cache'}"]
    try:
        code = int(pytest.main(full_args, plugins=[collector]))
    except BaseException as exc:
        return {
            "status": "error",
            **_exception_info(exc),
            "tests": collector.counts,
            "failures": collector.failures,
        }
    status = PYTEST_STATUS.get(code, "error")
    outcome: dict[str, Any] = {
        "status": status,
        "pytest_exit_code": code,
        "tests": collector.counts,
        "failures": collector.failures,
    }
    if code == 5:
        outcome["exc_message"] = "pytest collected no tests"
    return outcome


# Bound at load time: a snippet that patches json or os must not stop the result from being
# reported.
_dumps, _write, _close = json.dumps, os.write, os.close


def _send_result(fd: int, outcome: dict[str, Any]) -> None:
    view = memoryview(_dumps(outcome).encode("utf-8"))
    while view:
        view = view[_write(fd, view) :]
    _close(fd)


def _prepare_process(out_fd: int, err_fd: int) -> None:
    """Own process group, output to the parent's pipes, default signal handling."""
    try:
        os.setsid()
    except OSError:
        pass
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # the snippet may have closed or replaced them
            pass


def load_sibling(name: str) -> Any:
    """A standard-library-only kernel module loaded by file path under a private name
    (`_boundary` finds this function as ``_liveforge_sandbox_loader.load_sibling``)."""
    sys.modules.setdefault("_liveforge_sandbox_loader", sys.modules[__name__])
    private = f"_liveforge_sandbox{name}"
    if private not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            private, Path(__file__).with_name(f"{name}.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[private] = module
        spec.loader.exec_module(module)
    return sys.modules[private]


def _enter_boundary(request: dict[str, Any]) -> dict[str, Any]:
    """Enter the check boundary (in namespaces, as a new process; see `_boundary.contain`)."""
    boundary = load_sibling("_boundary")
    policy = boundary.BoundaryPolicy.from_dict(
        {**request["boundary"], "parent_pid": request.get("parent_pid")}
    )
    handshake, prepared = request.get("handshake"), request.get("ruleset_fd")
    entered = request.get("entered")  # a check made ahead of its run (see `_spare`)
    report: dict[str, Any] = boundary.contain(policy, handshake, prepared, entered)
    return report


def child_main(request: dict[str, Any], out_fd: int, err_fd: int, result_fd: int) -> NoReturn:
    """Entry point of a forked child: enter the boundary, apply the overlay, run, send the
    outcome as JSON on `result_fd`, exit."""
    code = 0
    report: dict[str, Any] | None = None
    try:
        os.set_inheritable(result_fd, False)
        _prepare_process(out_fd, err_fd)
        os.chdir(request["cwd"])
        sys.path[:] = request["sys_path"]
        os.environ.clear()
        os.environ.update(request["environ"])
        os.environ.update(request.get("env", {}))
        report = _enter_boundary(request)
        install_overlay(OverlayModule(**entry) for entry in request["overlay"])
        if request["kind"] == "snippet":
            sys.argv = [request["filename"]]
            outcome = run_snippet(request["code"], request["filename"], request["memory_mb"])
        else:
            sys.argv = ["pytest", *request["args"]]
            outcome = run_pytest(request["args"], Path(request["boundary"]["scratch"]))
            code = int(outcome.get("pytest_exit_code") or 0)  # the run's exit code is pytest's
        outcome["refused_starts"] = load_sibling("_limits").refused_starts()
    except BaseException as exc:
        outcome = {"status": "error", "harness_error": True, **_exception_info(exc)}
        code = 70
    outcome["boundary"] = report
    _flush_streams()
    try:
        _send_result(result_fd, outcome)
    except BaseException:
        code = 71
    os._exit(code)
