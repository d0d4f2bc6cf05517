"""`%load_ext liveforge`: file edits applied before each cell, and magics over one Runtime.

Like IPython's autoreload, a saved `.py` file of a loaded module under the project root (the
current directory when the extension loads) is applied before the next cell runs — through
liveforge's patch engine, so functions and classes keep their identity, objects created
earlier run the new code, and a file that does not compile keeps the old code. Magics:

    %%lf_patch pkg.mod.func        the cell body is the new source of the dotted target
    %lf_verify CODE  /  %%lf_verify    run code in the sandbox, with the patches carried
    %lf_diff [MODULE]              unpersisted changes, memory against files
    %lf_persist [--force]          write the verified changes to files
    %lf_undo [CHANGE_ID]           undo the last step: a persist (files back), else the
                                   newest change in memory (or roll back that one)

`%lf_status` shows the project root and the changes. The runtime is `lf_runtime` in the
user namespace. As `%autoreload 3` does, names the user took from a changed module follow it
(see `_names`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

from liveforge.ipython._names import UserNames
from liveforge.kernel import Runtime
from liveforge.kernel.errors import LiveforgeError, UnverifiedChange
from liveforge.watch import HELD, Watcher

__all__ = ["LiveforgeMagics", "load_ipython_extension", "unload_ipython_extension"]


class FileTimes:
    """Modification times of the loaded modules' files under one root."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.join(str(root), "")
        self.seen: dict[str, tuple[int, int]] = {}
        self._started = False
        self.changed()

    def changed(self) -> list[str]:
        """Files saved since the last call, and files of modules imported since then."""
        first, found = not self._started, []
        self._started = True
        for module in list(sys.modules.values()):
            filename = getattr(module, "__file__", None)
            if not isinstance(filename, str) or not filename.endswith(".py"):
                continue
            path = os.path.realpath(filename)
            if not path.startswith(self.root):
                continue
            try:
                stat = os.stat(path)
            except OSError:
                continue
            stamp = (stat.st_mtime_ns, stat.st_size)  # size too: mtime ticks are coarse
            # a module imported since the last look may have been saved since its import:
            # the engine compares the file with the source it ran and skips it if equal
            if self.seen.get(path, stamp) != stamp or (path not in self.seen and not first):
                found.append(path)
            self.seen[path] = stamp
        return found


@magics_class
class LiveforgeMagics(Magics):
    """The `%lf_*` magics and the before-each-cell application of file edits."""

    def __init__(self, shell: Any, runtime: Runtime) -> None:
        super().__init__(shell)
        self.runtime = runtime
        self.watcher = Watcher(
            runtime,
            report=self._say,
            rerun_hint="run it in a cell (importlib.reload runs all)",
            undo_hint="%lf_persist them, or %lf_undo them and the save applies",
            # the cell runs after the editor finished writing: nothing to wait for
            settle=0.0,
            hold=0.0,
        )
        self.times = FileTimes(runtime.project_root)
        self.names = UserNames(shell.user_ns, self.times.root)

    def _say(self, line: str) -> None:
        print(f"liveforge: {line}")

    def apply_saved(self, *_: Any) -> None:
        """The `pre_run_cell` hook: apply every file saved since the last cell."""
        known = set(self.times.seen)
        changed = self.times.changed()
        if changed:
            before = self.names.taken()
            for applied in self.watcher.apply_files(changed):
                # a module imported since the last cell is looked at in case it was saved
                # since its import; when it was not, there is nothing to say
                if not (applied.path not in known and applied.outcome == "same"):
                    self._say(applied.text)
            self._followed(before)

    def _apply_refused(self) -> None:
        """Apply again the saves refused so far (after an undo they may apply now); a save
        held as half-written waits for the file's next save."""
        paths = {path for path, why in self.watcher.refused().values() if why != HELD}
        if paths:
            before = self.names.taken()
            for applied in self.watcher.apply_files(paths, again=True):
                self._say(applied.text)
            self._followed(before)

    def ran_cell(self, result: Any) -> None:
        """The `post_run_cell` hook: remember the modules the cell star-imported."""
        self.names.noticed(getattr(getattr(result, "info", None), "raw_cell", "") or "")

    def _followed(self, before: Any) -> None:
        """Names of the user namespace that took what a change made (see `_names`)."""
        names = self.names.follow(before)
        if names:
            self._say(
                f"{', '.join(names)} in this namespace now "
                f"{'name' if len(names) > 1 else 'names'} what the changed modules hold, "
                "as a fresh import would"
            )

    @line_cell_magic
    def lf_patch(self, line: str, cell: str | None = None) -> None:
        """%%lf_patch TARGET — the cell body becomes the source of the dotted TARGET."""
        target = line.strip()
        if not target or cell is None or not cell.strip():
            raise UsageError(
                "%%lf_patch TARGET: write the target on the first line and the new source "
                "below it, e.g.\n%%lf_patch pkg.mod.func\ndef func(x):\n    return x + 1"
            )
        before = self.names.taken()
        change = self._run(lambda: self.runtime.patch(target, cell))
        print(change.summary())
        self._followed(before)
        print(change.diff().rstrip("\n"))

    @line_cell_magic
    def lf_verify(self, line: str, cell: str | None = None) -> None:
        """%lf_verify CODE (or a %%lf_verify cell): run it in the sandbox with the patches."""
        code = cell if cell is not None else line
        if not code.strip():
            raise UsageError("%lf_verify CODE: give the code to run, or use a %%lf_verify cell")
        result = self._run(lambda: self.runtime.verify(code))
        print(result.summary())

    @line_magic
    def lf_diff(self, line: str) -> None:
        """%lf_diff [MODULE]: unpersisted changes as a unified diff."""
        module = line.strip() or None
        diff = self._run(lambda: self.runtime.diff(module))
        waiting = {
            name: why
            for name, (path, why) in self.watcher.refused().items()
            if module in (None, name)
        }
        if diff.strip():
            print(diff.rstrip("\n"))
        elif not waiting:
            print("no unpersisted changes: memory matches the files")
        for name, why in waiting.items():
            print(f"{name}: its file was saved since and differs from memory (the save was {why})")

    @line_magic
    def lf_persist(self, line: str) -> None:
        """%lf_persist [--force]: write changes to files (--force: unverified ones too)."""
        words = line.split()
        if any(w != "--force" for w in words):
            raise UsageError("%lf_persist takes only --force")
        try:
            done = self.runtime.persist(force="--force" in words)
        except UnverifiedChange as exc:
            raise UsageError(
                f"{exc}\nCheck them with %lf_verify CODE, or write anyway: %lf_persist --force"
            ) from None
        except LiveforgeError as exc:
            raise UsageError(str(exc)) from None
        print(done.summary() if done.modules else "nothing to persist: memory matches the files")
        self.times.changed()  # our own writes are not edits to apply

    @line_magic
    def lf_undo(self, line: str) -> None:
        """%lf_undo [CHANGE_ID]: undo the last step — a persist (the files go back, the
        change stays in memory) or a change in memory — or roll back CHANGE_ID and the
        later changes of its module. The same steps as the chat's /undo."""
        if not line.strip() and self.runtime.files_are_newest():
            done = self._run(self.runtime.unpersist)
            self.times.changed()  # our own writes are not edits to apply
            print(done.summary() + "\n(files restored; %lf_undo again undoes the step before)")
            return
        before = self.names.taken()
        undone = self._run(lambda: self.runtime.rollback(line.strip() or None))
        for change in undone:
            # what the rollback could not take back (the patch's own notes are history now)
            said = "".join(
                f"\n  note: {n.replace('Restart the program', 'Restart the kernel')}"
                for n in change.rollback_notes
            )
            print(f"rolled back {change.summary().splitlines()[0]}{said}")
        self._followed(before)
        self._apply_refused()

    @line_magic
    def lf_status(self, line: str) -> None:
        """%lf_status: the project root and this session's changes."""
        print(f"project {self.runtime.project_root}")
        for change in self.runtime.history():
            text = change.summary()
            later = self.watcher.replaced.get(change.id)
            if later is not None:  # a later save of the module took its place
                text = text.replace("[rolled_back]", f"[replaced by {later}]", 1)
            print(text)

    def _run(self, work: Any) -> Any:
        try:
            return work()
        except LiveforgeError as exc:
            raise UsageError(str(exc)) from None


def load_ipython_extension(ipython: Any) -> None:
    """Called by `%load_ext liveforge`: a Runtime on the current directory, hooks, magics."""
    if getattr(ipython, "_liveforge_magics", None) is not None:
        print("liveforge: already loaded")
        return
    runtime = Runtime(project_root=Path.cwd())
    magics = LiveforgeMagics(ipython, runtime)
    ipython.register_magics(magics)
    ipython.events.register("pre_run_cell", magics.apply_saved)
    ipython.events.register("post_run_cell", magics.ran_cell)
    ipython.push({"lf_runtime": runtime})
    ipython._liveforge_magics = magics
    print(
        f"liveforge: saves under {runtime.project_root} apply before each cell; "
        "magics %lf_patch %lf_verify %lf_diff %lf_persist %lf_undo %lf_status"
    )


def unload_ipython_extension(ipython: Any) -> None:
    """Called by `%unload_ext liveforge`: stop applying saves; close the runtime."""
    magics = getattr(ipython, "_liveforge_magics", None)
    if magics is None:
        return
    ipython.events.unregister("pre_run_cell", magics.apply_saved)
    ipython.events.unregister("post_run_cell", magics.ran_cell)
    magics.runtime.close()
    ipython._liveforge_magics = None
