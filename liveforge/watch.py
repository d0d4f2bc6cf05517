"""File saves applied to a running program: `liveforge watch` and `%load_ext liveforge`.

A `Watcher` maps each saved `.py` file under the project root to the modules loaded from it
and reloads them through the runtime's patch engine (`Runtime.reload`): functions and
classes keep their identity, only changed statements run, and a save that does not compile
or raises while executing leaves the old code running. Each save yields one concise line.

A changed top-level statement that runs a loop or a call (`while True: serve()`, `main()`
at the bottom, `if __name__ == "__main__": ...`) is taken into the module's source but not
run again: run in the watcher's thread it could block every later save. The line names
it; restarting the program runs it, and `rerun=True` (`liveforge watch --rerun`) runs such
statements too, as jurigged does. Assignments, imports and definitions always apply.
After a change applied, an optional snippet (`verify`) and pytest selection (`test`) run in
the sandbox against the new state; when the snippet gives one thing in the running program
(a fork of it) and another in a fresh import of the saved files, a `DIVERGENT` line says
both.

From inside a running program ("attach")::

    from liveforge.watch import start
    watcher = start(".")          # a background thread follows the project's files
    ...
    watcher.stop()

File notifications come from `watchfiles` (the operating system's native watcher).
"""

from __future__ import annotations

import ast
import os
import sys
import threading
import time
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from liveforge.kernel import Change, Runtime
from liveforge.kernel.errors import LiveforgeError, PatchSyntaxError, UnpersistedChanges

if TYPE_CHECKING:
    from liveforge.kernel.checks._records import RunResult

__all__ = ["Applied", "Watcher", "modules_of", "runs_code", "start"]

STEP_MS = 10
"""How long a burst of file events may keep growing before it is applied (editors often
write a file in several steps: truncate, write, rename)."""


@dataclass
class Applied:
    """What one save did to one module: `line` is the one-line report."""

    module: str
    ok: bool
    line: str
    change: Change | None = None
    checks: list[str] = field(default_factory=list)


def modules_of(path: str | os.PathLike[str]) -> list[str]:
    """Names of the loaded modules whose code comes from the file `path`; a module known
    under two names (`__main__` is also `__mp_main__` once multiprocessing ran) once."""
    wanted = os.path.realpath(path)
    names: dict[int, str] = {}
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str) and filename.endswith(".py"):
            if os.path.realpath(filename) == wanted:
                names.setdefault(id(module), name)
    return list(names.values())


_NO_RUN = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Raise,
    ast.Assert,
    ast.Delete,
)
_RUNS = (ast.While, ast.For, ast.AsyncFor, ast.Call, ast.Await)
_SKIPPED = "not re-run: "


def runs_code(node: ast.stmt) -> bool:
    """True for a top-level statement that runs a loop or a call outside any definition it
    holds (`main()`, `while True: ...`, `if __name__ == "__main__": ...`); False for
    definitions, imports, assignments, `raise`/`assert`/`del` and blocks that only define
    (`try: import x ...`)."""
    if isinstance(node, _NO_RUN):
        return False
    pending: list[ast.AST] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, _RUNS):
            return True
        pending.extend(
            child
            for child in ast.iter_child_nodes(current)
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        )
    return False


RERUN_HINT = "restart the program to run it, or watch with --rerun"
"""What the line says runs a statement the watcher left unrun (`liveforge watch`'s words)."""


def describe(change: Change, rerun_hint: str = RERUN_HINT) -> str:
    """A change as "module: ~updated +added -removed (id)", notes after it; statements left
    unrun are named last, with `rerun_hint`: what runs them."""
    parts = [f"{change.module}:"]
    for label, names in (("~", change.updated), ("+", change.added), ("-", change.removed)):
        if names:
            parts.append(label + ",".join(names))
    skipped = [n.removeprefix(_SKIPPED) for n in change.notes if n.startswith(_SKIPPED)]
    notes = [n for n in change.notes if not n.startswith(_SKIPPED)]
    if len(parts) == 1:
        parts.append("statements left as they run" if skipped else "statements re-run")
    parts.append(f"({change.id})")
    text = " ".join(parts) + "".join(f"; note: {note}" for note in notes)
    if skipped:
        text += f"; not re-run (a loop or a call at top level): {', '.join(skipped)} — {rerun_hint}"
    return text


def _divergence(result: RunResult, change_ids: list[str]) -> str:
    """The line for a `verify` whose runs in the program and in a fresh import disagreed
    after the changes `change_ids`."""
    live = result.live
    running = (live.value_repr or live.exc_type or live.status) if live else "?"
    fresh = result.value_repr or result.exc_type or result.status
    return (
        f"DIVERGENT ({', '.join(change_ids)}): the running program gives "
        f"{_clip(running)}, a fresh import of the saved files {_clip(fresh)} (run "
        f"{result.run_id}): state made before the save, or a statement not re-run; restart "
        "the program to run the files as saved"
    )


class Watcher:
    """Applies saved files to the live modules of `runtime` and reports each one.

    `report(line)` receives every line (default: standard error). `verify` is Python code and
    `test` pytest arguments, both run in the sandbox after each applied save (None: skip).
    `rerun` runs changed top-level loops and calls too (see the module docstring);
    `rerun_hint` is what the line says runs one left unrun, in the front end's words.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        report: Callable[[str], None] | None = None,
        verify: str | None = None,
        test: list[str] | None = None,
        timeout: float = 60.0,
        rerun: bool = False,
        rerun_hint: str = RERUN_HINT,
    ) -> None:
        self.runtime = runtime
        self.rerun = rerun
        self.rerun_hint = rerun_hint
        self.report = report or _to_stderr
        self.verify = verify
        self.test = test
        self.timeout = timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._failed: dict[str, str] = {}
        self.track_loaded()

    def track_loaded(self) -> None:
        """Remember the current source of every loaded module under the project root, so a
        later save is compared with what runs now (not with the file as it is then)."""
        root = os.path.join(str(self.runtime.project_root), "")
        for module in list(sys.modules.values()):
            filename = getattr(module, "__file__", None)
            if isinstance(filename, str) and filename.endswith(".py"):
                if os.path.realpath(filename).startswith(root):
                    try:
                        self.runtime.registry.track(module)
                    except (ValueError, OSError):
                        continue

    # -- applying ---------------------------------------------------------------------------

    def apply_files(self, paths: Iterable[str | os.PathLike[str]]) -> list[Applied]:
        """Reload the modules of each saved file; one `Applied` per module that changed."""
        results = []
        for path in sorted({os.fspath(p) for p in paths}):
            if not path.endswith(".py") or not os.path.isfile(path):
                continue
            for name in modules_of(path):
                applied = self.apply_module(name, path)
                if applied is not None:
                    results.append(applied)
        changes = [a.change for a in results if a.ok and a.change is not None]
        for applied in results:
            if applied.ok and applied.change is not None:
                applied.checks = self.run_checks(changes)
                break
        return results

    def apply_module(self, name: str, path: str) -> Applied | None:
        """Reload one module from its saved file; None when the file equals what runs."""
        started = time.perf_counter()
        try:
            change = self.runtime.reload(name, skip=None if self.rerun else runs_code)
        except PatchSyntaxError as exc:
            return Applied(name, False, self._syntax_line(path, exc))
        except UnpersistedChanges as exc:
            return Applied(
                name,
                False,
                f"{name}: not applied, it has in-memory changes "
                f"({', '.join(exc.change_ids)}) the save would discard; persist or undo them",
            )
        except LiveforgeError as exc:
            return Applied(name, False, f"{name}: not applied ({_first_line(exc)}); old code kept")
        if not change.id:
            return None
        elapsed = (time.perf_counter() - started) * 1000
        line = f"{describe(change, self.rerun_hint)}  {elapsed:.0f} ms"
        return Applied(name, True, line, change)

    def _syntax_line(self, path: str, exc: PatchSyntaxError) -> str:
        """ "file:line: SyntaxError: reason; the old code keeps running" for a bad save."""
        message, line = "invalid syntax", exc.line
        try:
            with tokenize.open(path) as handle:
                ast.parse(handle.read(), path)
        except SyntaxError as error:
            message, line = error.msg, error.lineno or line
        except (OSError, UnicodeDecodeError):
            pass
        where = f"{_relative(path, self.runtime.project_root)}:{line or '?'}"
        return f"{where}: SyntaxError: {message}; the old code keeps running"

    def run_checks(self, changes: Iterable[Change] = ()) -> list[str]:
        """Run the `verify` snippet and the `test` selection after `changes` (the save's);
        one summary line each, and one more when the snippet's runs diverged."""
        rt, lines = self.runtime, []
        if self.verify is not None:
            result = rt.verify(self.verify, timeout=self.timeout)
            lines.append("verify: " + result.summary())
            if result.divergent:
                ids = dict.fromkeys([*(c.id for c in changes), *result.change_ids])
                lines.append(_divergence(result, list(ids)))
        if self.test is not None:
            lines.append("test: " + rt.run_tests(self.test, timeout=self.timeout).summary())
        return lines

    def _apply_and_report(self, paths: Iterable[str]) -> None:
        for applied in self.apply_files(paths):
            # an editor's save can arrive as several events: one failure is said once
            if not applied.ok and self._failed.get(applied.module) == applied.line:
                continue
            if applied.ok:
                self._failed.pop(applied.module, None)
            else:
                self._failed[applied.module] = applied.line
            self.report(("applied " if applied.ok else "kept old code: ") + applied.line)
            for line in applied.checks:
                self.report("  " + line.splitlines()[0] if line else line)

    # -- the background thread --------------------------------------------------------------

    def start(self) -> Watcher:
        """Follow the project's files in a daemon thread until `stop()`; returns self."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._follow, name="liveforge-watch", daemon=True
            )
            self._thread.start()
            self._started.wait(10)
        return self

    def stop(self) -> None:
        """Stop following files (waits for a save being applied to finish)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def _follow(self) -> None:
        from watchfiles import PythonFilter, watch

        for batch in watch(
            self.runtime.project_root,
            watch_filter=PythonFilter(),
            stop_event=self._stop,
            step=STEP_MS,
            debounce=400,
            # an empty batch after this many ms tells that the OS watcher is in place
            rust_timeout=100,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            self._started.set()
            try:
                self._apply_and_report(path for _, path in batch)
            except Exception as exc:  # a fault here must never take the program down
                self.report(f"internal error while applying a save ({type(exc).__name__}: {exc})")


def start(
    project_root: str | os.PathLike[str] = ".",
    *,
    runtime: Runtime | None = None,
    report: Callable[[str], None] | None = None,
    verify: str | None = None,
    test: list[str] | None = None,
    rerun: bool = False,
) -> Watcher:
    """Apply every save under `project_root` to this running program, from now on."""
    rt = runtime or Runtime(project_root=Path(project_root))
    return Watcher(rt, report=report, verify=verify, test=test, rerun=rerun).start()


def _to_stderr(line: str) -> None:
    sys.stderr.write(f"[liveforge] {line}\n")
    sys.stderr.flush()


def _clip(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path
