"""File saves applied to a running program: `liveforge watch` and `%load_ext liveforge`.

A `Watcher` maps each saved `.py` file under the project root to the modules loaded from it
and reloads them through the runtime's patch engine (`Runtime.reload`): functions and
classes keep their identity, only changed statements run, and a save that does not compile
or raises while executing leaves the old code running. Each save yields exactly one line
per module: applied (what changed, signatures and dataclass fields included, and any thread
or coroutine still running the old code of an updated function), refused (why; the old code
keeps running), held (it looks half-written), back in sync after a refusal, or unchanged.

A save is read once the file stopped changing for a moment (`settle`); an editor that
truncates and then writes is never seen half-way: an empty file, one that does not parse, or
one that removes most of a module's definitions is read again for up to `hold` seconds, and
if it still looks half-written it is held — the next save of the file applies (touching it
is enough), even one that still removes as much.

A changed top-level statement that runs a loop or a call (`while True: serve()`, `main()`
at the bottom, `if __name__ == "__main__": ...`) is taken into the module's source but not
run again: run in the watcher's thread it could block every later save. The line names
it; restarting the program runs it, and `rerun=True` (`liveforge watch --rerun`) runs such
statements too, as jurigged does. Assignments, imports and definitions always apply.
After a change applied and was reported, an optional snippet (`verify`) and pytest
selection (`test`) run in the sandbox against the new state, in the background: the next
save applies at once and stops a check still running for an older one. When the snippet
gives one thing in the running program (a fork of it) and another in a fresh import of the
saved files, a `DIVERGENT` line says both.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from liveforge.kernel import Change, ChangeStatus, Runtime
from liveforge.kernel.errors import LiveforgeError, PatchSyntaxError, UnpersistedChanges
from liveforge.watch._checks import BackgroundChecks
from liveforge.watch._saves import (
    OldCode,
    Saved,
    edits,
    read_saved,
    read_settled,
    shape_notes,
    suspect,
)

__all__ = ["Applied", "Watcher", "modules_of", "runs_code", "start"]

STEP_MS = 10
"""How long a burst of file events may keep growing before it is read (editors often
write a file in several steps: truncate, write, rename)."""
SETTLE = 0.02
"""Seconds a saved file must stay unchanged (size, time and bytes) before it is applied."""
HOLD = 1.0
"""Seconds a save that looks half-written (empty, not parsing, most definitions gone) is
read again while waiting for the rest of the write, before it is held or reported."""

HELD = "held as half-written"
"""Why a module's last save was not applied, when it looked half-written."""

Outcome = Literal["applied", "refused", "held", "in sync", "same"]

_PREFIX = {
    "applied": "applied ",
    "refused": "kept old code: ",
    "held": "held: ",
    "in sync": "in sync: ",
    "same": "unchanged: ",
}


@dataclass
class Applied:
    """What one save did to one module: `line` says it; `outcome` is one of "applied",
    "refused" (the old code keeps running), "held" (looks half-written: applied when saved
    again), "in sync" (after a refusal, the file matches memory again) and "same" (the file
    matches the running code)."""

    module: str
    ok: bool
    line: str
    change: Change | None = None
    outcome: Outcome = "applied"
    path: str = ""

    @property
    def text(self) -> str:
        """The line as the watch reports it, its outcome first."""
        return _PREFIX[self.outcome] + self.line


def modules_of(path: str | os.PathLike[str]) -> list[str]:
    """Names of the loaded modules whose code comes from the file `path`; a module known
    under two names (`__main__` is also `__mp_main__` once multiprocessing ran) once."""
    wanted = os.path.realpath(path)
    names: dict[int, str] = {}
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str) and filename.endswith(".py"):
            if _realpath(filename) == wanted:
                names.setdefault(id(module), name)
    return list(names.values())


_REAL: dict[str, str] = {}


def _realpath(filename: str) -> str:
    """`os.path.realpath`, remembered: a save is matched against every loaded module, and
    resolving hundreds of paths anew would cost tens of milliseconds per save."""
    real = _REAL.get(filename)
    if real is None:
        real = _REAL[filename] = os.path.realpath(filename)
    return real


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
UNDO_HINT = "persist or roll them back, then save again"
"""What the line says to do with in-memory changes a save would discard."""


def describe(change: Change, rerun_hint: str = RERUN_HINT, took: str = "") -> str:
    """A change as "module: ~updated +added -removed (id)", `took` (the time it took) and
    notes after it; statements left unrun are named last, with `rerun_hint`: what runs
    them."""
    parts = [f"{change.module}:"]
    for label, names in (("~", change.updated), ("+", change.added), ("-", change.removed)):
        if names:
            parts.append(label + ",".join(names))
    skipped = [n.removeprefix(_SKIPPED) for n in change.notes if n.startswith(_SKIPPED)]
    notes = list(dict.fromkeys(n for n in change.notes if not n.startswith(_SKIPPED)))
    if len(parts) == 1:
        parts.append("statements left as they run" if skipped else "statements re-run")
    parts.append(f"({change.id})")
    text = " ".join(parts) + (f"  {took}" if took else "")
    text += "".join(f"; note: {note}" for note in notes)
    if skipped:
        text += f"; not re-run (a loop or a call at top level): {', '.join(skipped)} — {rerun_hint}"
    return text


class Watcher:
    """Applies saved files to the live modules of `runtime` and reports each one.

    `report(line)` receives every line (default: standard error). `verify` is Python code and
    `test` pytest arguments, both run in the sandbox in the background after each applied
    save (None: skip); a newer save supersedes them. `rerun` runs changed top-level loops
    and calls too (see the module docstring); `rerun_hint` is what the line says runs one
    left unrun, and `undo_hint` what to do with in-memory changes a save would discard, both
    in the front end's words. A save is read once it stopped changing for `settle` seconds;
    one that looks half-written is read again for up to `hold` seconds, then held until it
    is saved again.
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
        undo_hint: str = UNDO_HINT,
        settle: float = SETTLE,
        hold: float = HOLD,
    ) -> None:
        self.runtime = runtime
        self.rerun = rerun
        self.rerun_hint = rerun_hint
        self.undo_hint = undo_hint
        self.report = report or _to_stderr
        self.settle = settle
        self.hold = hold
        self.checks = BackgroundChecks(
            runtime, self.report, verify=verify, test=test, timeout=timeout
        )
        #: ids of changes a later save of the same module replaced, with the replacing id
        self.replaced: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._refused: dict[str, tuple[str, str]] = {}  # module -> (file, why)
        self._seen: dict[str, tuple[int, int, str]] = {}  # file -> stamp of the last save read
        self._held: set[str] = set()  # files whose last save was held as half-written
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

    def refused(self) -> dict[str, tuple[str, str]]:
        """Modules whose last save was refused or held: module -> (file, why)."""
        return dict(self._refused)

    # -- applying ---------------------------------------------------------------------------

    def apply_files(
        self, paths: Iterable[str | os.PathLike[str]], *, again: bool = False
    ) -> list[Applied]:
        """Apply each saved file to the modules loaded from it; one `Applied` per module.
        A file read before with the same stamp (the same save, notified twice) is skipped
        unless `again`."""
        files = sorted({os.fspath(p) for p in paths if os.fspath(p).endswith(".py")})
        loaded = {p: names for p in files if (names := modules_of(p))}
        results = []

        def doubtful(saved: Saved) -> bool:
            return self._doubtful(saved, loaded[saved.path])

        for saved in read_settled(list(loaded), self.settle, self.hold, doubtful):
            if not again and self._seen.get(saved.path) == saved.stamp:
                continue
            self._seen[saved.path] = saved.stamp
            for name in loaded[saved.path]:
                applied = self.apply_module(name, saved.path, saved)
                applied.path = saved.path
                results.append(applied)
        return results

    def _doubtful(self, saved: Saved, names: list[str]) -> bool:
        """True when a save may be caught half-written: unreadable, or emptying most of a
        loaded module `names` (one that does not parse is reported at once: it changes
        nothing)."""
        if saved.text is None:
            return True
        return any(suspect(self._memory(name) or "", saved.text) for name in names)

    def _memory(self, name: str) -> str | None:
        """The source module `name` runs now (tracked from its file on first sight)."""
        record = self.runtime.registry.get(name)
        module = sys.modules.get(name)
        if record is None and module is not None:
            try:
                record = self.runtime.registry.track(module)
            except (ValueError, OSError):
                return None
        return record.source if record is not None else None

    def apply_module(self, name: str, path: str, saved: Saved | None = None) -> Applied:
        """Apply one module's saved file, and say how it went (see `Applied.outcome`)."""
        saved = saved or read_saved(path)
        before = self._memory(name)
        where = _relative(path, self.runtime.project_root)
        if saved.text is None:
            gone = f"{where}: cannot be read (deleted, or not text); {name} keeps running as it was"
            return self._refuse(name, path, gone)
        why = suspect(before, saved.text) if before is not None else None
        if why is not None and path not in self._held:
            self._held.add(path)
            self._refused[name] = (path, HELD)
            line = (
                f"{where}: it looks half-written ({why}); {name} keeps running as it was. "
                "Save it again to apply it"
            )
            return Applied(name, False, line, outcome="held")
        self._held.discard(path)
        return self._reload(name, path, before or "", saved.text)

    def _reload(self, name: str, path: str, before: str, text: str) -> Applied:
        """Reload `name` from its file (`text`, replacing `before`) and say how it went."""
        started = time.perf_counter()
        old = OldCode(sys.modules.get(name))
        live = [c for c in self.runtime.history() if c.module == name]
        live = [c for c in live if c.status is not ChangeStatus.ROLLED_BACK]
        try:
            change = self.runtime.reload(name, skip=None if self.rerun else runs_code)
        except PatchSyntaxError as exc:
            return self._refuse(name, path, self._syntax_line(path, exc))
        except UnpersistedChanges as exc:
            ids = ", ".join(exc.change_ids)
            why = f"{name}: not applied, it has in-memory changes ({ids}) the save would discard"
            return self._refuse(name, path, f"{why}; {self.undo_hint}")
        except LiveforgeError as exc:
            kept = edits(before, text)
            what = f"none of the save's edits ({kept}) applied" if kept else "nothing applied"
            why = f"{name}: not applied ({_first_line(exc)}); {what}, the old code keeps running"
            return self._refuse(name, path, why)
        refused = self._refused.pop(name, None)
        if not change.id and refused is None:
            return Applied(name, True, f"{name}: the file matches the running code", None, "same")
        if not change.id:
            line = (
                f"{name}: memory and file agree again; the running code is the file's "
                f"(the save before was {refused[1] if refused else '?'})"
            )
            return Applied(name, True, line, None, "in sync")
        # the save's reload took the place of the module's earlier unpersisted changes
        gone = [c for c in live if c.status is ChangeStatus.ROLLED_BACK]
        self.replaced.update({c.id: change.id for c in gone})
        took = f"{(time.perf_counter() - started) * 1000:.0f} ms"
        return Applied(name, True, self._applied_line(change, old, took), change)

    def _applied_line(self, change: Change, old: OldCode, took: str) -> str:
        """What an applied change did, with what a bare list of names under-states: changed
        signatures and fields, and old code still running in a thread or coroutine."""
        notes = shape_notes(change.before, change.after, change.updated)
        running = old.still_running(change.updated, OldCode(sys.modules.get(change.module)))
        if running:
            notes.append(
                "still running its old code: " + ", ".join(running) + " (a call in progress "
                "keeps its code until it returns; restart the program to run the new code there)"
            )
        return describe(change, self.rerun_hint, took) + "".join(f"; {n}" for n in notes)

    def _refuse(self, name: str, path: str, line: str) -> Applied:
        why = "a syntax error, kept out" if "SyntaxError: " in line else "not applied"
        self._refused[name] = (path, why)
        return Applied(name, False, line, outcome="refused")

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

    def apply_and_report(self, paths: Iterable[str | os.PathLike[str]]) -> list[Applied]:
        """Apply the saves, report one line per module, then start the checks of what
        applied in the background (a newer save supersedes them)."""
        results = self.apply_files(paths)
        for applied in results:
            self.report(applied.text)
        self.checks.submit([a.change for a in results if a.change is not None])
        return results

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
        """Stop following files (waits for a save being applied to finish) and stop a check
        in progress."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self.checks.close()

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
                self.apply_and_report(path for _, path in batch)
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
    settle: float = SETTLE,
) -> Watcher:
    """Apply every save under `project_root` to this running program, from now on."""
    rt = runtime or Runtime(project_root=Path(project_root))
    return Watcher(rt, report=report, verify=verify, test=test, rerun=rerun, settle=settle).start()


def _to_stderr(line: str) -> None:
    sys.stderr.write(f"[liveforge] {line}\n")
    sys.stderr.flush()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    # the engine's advice is for a patch; a save's line says what to do itself
    first = first.replace(" Nothing was changed; fix the source and patch again.", "")
    return f"{type(exc).__name__}: {first}"


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path
