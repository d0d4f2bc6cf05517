# mypy: disable-error-code="empty-body"
"""The agent's file access: read, write and edit the project's text files.

Paths are relative to the project root; anything outside it is refused unless it lies under
one of ``settings.allow_paths``. Every write is a recorded change of the runtime
(`Runtime.write_file`): in the same history as patches, shown by the diff, undone by
rollback. The file of a Python module the runtime has loaded is changed through the patch
engine, so the running module and its file never disagree.

    files = Files(runtime=rt, settings=FileSettings())
    files.read("pkg/mod.py", start=10, end=40)        # numbered lines 10-40
    files.edit("README.md", "old words", "new words") # exactly one match, else refused
    files.apply_patch(unified_diff)                   # every hunk applies, or nothing is written
    files.preview(files.patched(unified_diff))        # the diff it would make, nothing written
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import forwardpy

from liveforge.declarations.tool_settings import FileSettings
from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime

__all__ = ["EditRefused", "Files"]


class EditRefused(LiveforgeError, ValueError):
    """An edit or a patch that does not apply as given; nothing was written."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class Files(forwardpy.Object):
    """Reading and changing the project's text files, every write a recorded change."""

    runtime: Runtime
    settings: FileSettings
    seen: dict[str, str] | None = None
    """What the agent last read or wrote of each file (real path -> digest of its text), kept
    across calls by the caller (an agent's toolbox service `file_reads`). With it, `edit`,
    `edited`, `apply_patch` and `patched` refuse a file whose text changed since: the model
    must read it again first. None: no such check."""

    def resolve(self, path: str) -> Path:
        """The real path of ``path``; `UnsafePath` when it leaves the allowed places."""
        ...

    def read(self, path: str, start: int = 1, end: int | None = None) -> str:
        """Lines ``start``..``end`` (1-based, inclusive) of a text file, numbered."""
        ...

    def write(self, path: str, content: str) -> Change:
        """Replace (or create) a file with ``content``."""
        ...

    def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> Change:
        """Replace the one occurrence of ``old`` by ``new`` (every one with ``replace_all``);
        `EditRefused` when ``old`` is missing, or found more than once without replace_all."""
        ...

    def apply_patch(self, patch: str) -> list[Change]:
        """Apply a unified diff (one or more files; git-style headers too), all or nothing;
        `EditRefused` names the first hunk that does not apply."""
        ...

    def edited(self, path: str, old: str, new: str, replace_all: bool = False) -> str:
        """The text `edit` would write (nothing is written); `EditRefused` as `edit`."""
        ...

    def patched(self, patch: str) -> dict[str, str]:
        """The text of each file `apply_patch` would write, by path (nothing is written);
        `EditRefused` as `apply_patch`."""
        ...

    def preview(self, planned: dict[str, str]) -> str:
        """A unified diff from each file's text now to its planned text (a new file from
        /dev/null): what a write will do, for the person asked to allow it."""
        ...
