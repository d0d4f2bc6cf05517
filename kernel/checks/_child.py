"""What runs inside a sandbox child: enter the boundary, apply the overlay, run the snippet
or the pytest selection, send the outcome back.

This module is loaded by file path under a private name in the template process, so that a
sandbox child never imports `liveforge` itself (the project under test may be liveforge, and
its modules must come from the overlay). It therefore uses the standard library only, and
loads its kernel siblings the same way (`load_sibling`): the overlay's import hook
(`_overlayhook`), pytest in the child (`_childpytest`), and how a child reports an exception
(`_childerrors`).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib.util
import json
import os
import signal
import sys
import types
from pathlib import Path
from typing import Any, NoReturn


def sibling_file(name: str) -> Path:
    """The file of kernel module `name`: beside this one, or in the boundary's folder."""
    here = Path(__file__).parent
    mine = here / f"{name}.py"
    return mine if mine.exists() else here.parent / "boundary" / f"{name}.py"


def load_sibling(name: str) -> Any:
    """A standard-library-only kernel module loaded by file path under a private name
    (`_boundary` finds this function as ``_liveforge_sandbox_loader.load_sibling``)."""
    sys.modules.setdefault("_liveforge_sandbox_loader", sys.modules[__name__])
    private = f"_liveforge_sandbox{name}"
    if private not in sys.modules:
        spec = importlib.util.spec_from_file_location(private, sibling_file(name))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[private] = module
        spec.loader.exec_module(module)
    return sys.modules[private]


if __package__:  # imported as liveforge.kernel.checks._child (a fork of the live process runs
    # snippets with `run_snippet`)
    from liveforge.kernel.checks import _childerrors, _childpytest, _overlayhook
else:  # loaded by file path in a sandbox template, which never imports liveforge
    _overlayhook, _childerrors, _childpytest = (
        load_sibling(name) for name in ("_overlayhook", "_childerrors", "_childpytest")
    )

OverlayModule = _overlayhook.OverlayModule
install_overlay, register_source = _overlayhook.install_overlay, _overlayhook.register_source
compile_source = _overlayhook.compile_source
exception_info, safe_repr = _childerrors.exception_info, _childerrors.safe_repr


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
        return {"status": status, **exception_info(exc)}
    return {"status": "passed", "value_repr": None if last is None else safe_repr(value)}


# Bound at load time: a snippet that patches json or os must not stop the result from being
# reported.
_dumps, _write, _close = json.dumps, os.write, os.close


def _send_result(fd: int, outcome: dict[str, Any]) -> None:
    view = memoryview(_dumps(outcome).encode("utf-8"))
    while view:
        view = view[_write(fd, view) :]
    _close(fd)


def _ending(code: int) -> dict[str, int] | None:
    """How this check ends, said with its result where it can be (the parent then need not
    wait for the exit, which tears down a copy of the template): `code`, and how many other
    processes of its pid namespace still run (what its pid 1 would count once it exited).
    Its output is closed first, so the parent sees the end of it. None where its /proc is
    the machine's (processes outside the namespace would be counted)."""
    try:
        if os.readlink("/proc/self") != str(os.getpid()):
            return None
        names = os.listdir("/proc")
    except OSError:
        return None
    running = 0
    for name in names:
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/stat") as file:
                state = file.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        running += state not in ("Z", "X")
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            _close(fd)
    return {"exit_code": code, "left_running": running}


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


SELF_SIGNAL = "liveforge: the check sent "
"""How a check's stderr says that its code signalled its own process or process group
(`_outcome` tells a kill the check did to itself from one by a limit or the timeout)."""

_SIGNALS = ("os.kill", "os.killpg", "signal.pthread_kill", "signal.raise_signal")


def _own_signals(event: str, args: tuple[Any, ...]) -> None:
    """Audit hook: note on stderr a signal the check sends to itself or its process group,
    before it arrives (the process may not live to report it)."""
    if event not in _SIGNALS:
        return
    try:
        if event == "signal.raise_signal":
            target, number = 0, args[0]
        else:
            target, number = args[0], args[1]
        own = event == "signal.pthread_kill" or target in (0, os.getpid(), -os.getpgid(0))
        if event == "os.killpg":
            own = target in (0, os.getpgid(0))
        if own and number:
            name = signal.Signals(number).name
            os.write(2, f"\n{SELF_SIGNAL}{name} to itself ({event}{tuple(args)!r})\n".encode())
    except Exception:  # never let the note change what the check does
        pass


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # the snippet may have closed or replaced them
            pass


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
        # Imports in a check write no bytecode caches: into the project they would be
        # writes of the check's own making, listed as the suite's (and the view that would
        # keep them is discarded). Code that compiles on purpose (compileall) still writes.
        sys.dont_write_bytecode = True
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        report = _enter_boundary(request)
        install_overlay(OverlayModule(**entry) for entry in request["overlay"])
        sys.addaudithook(_own_signals)
        if request["kind"] == "snippet":
            sys.argv = [request["filename"]]
            outcome = run_snippet(request["code"], request["filename"], request["memory_mb"])
        else:
            sys.argv = ["pytest", *request["args"]]
            outcome = _childpytest.run_pytest(request["args"], Path(request["boundary"]["scratch"]))
            code = int(outcome.get("pytest_exit_code") or 0)  # the run's exit code is pytest's
        outcome["refused_starts"] = load_sibling("_limits").refused_starts()
    except BaseException as exc:
        outcome = {"status": "error", "harness_error": True, **exception_info(exc)}
        code = 70
    outcome["boundary"] = report
    _flush_streams()
    if report is not None and report.get("processes") == "pid namespace":
        outcome["ended"] = _ending(code)
    try:
        _send_result(result_fd, outcome)
    except BaseException:
        code = 71
    os._exit(code)
