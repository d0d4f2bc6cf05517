"""The project's text files: read with line numbers, write, edit by exact text, apply a diff.

Paths are relative to the project root (files outside it only where the configuration allows
them). Every write is a recorded change: ``diff`` shows it, ``rollback`` undoes it. Writing the
file of a loaded Python module patches the running module too, in the same step.
"""

from __future__ import annotations

import re

from liveforge.declarations.files import Files
from liveforge.declarations.permissions import effect
from liveforge.kernel import Change
from liveforge.tools._context import runtime, service, settings
from liveforge.tools._output import clip

__all__ = ["apply_patch", "edit_file", "read_file", "write_file"]

_NUMBERED = re.compile(r"^\s*\d+ ")


def _files() -> Files:
    seen = service("file_reads")  # the agent's record of what it read: stale edits refused
    return Files(
        runtime=runtime(),
        settings=settings().files,
        seen=seen if isinstance(seen, dict) else None,
    )


@effect("read")
def read_file(path: str, start: int = 1, end: int | None = None) -> str:
    """Read a text file, lines numbered; for long files ask for a range.

    Args:
        path: file path relative to the project root
        start: first line to show (1-based)
        end: last line to show (inclusive); omit for the end of the file
    """
    text = _files().read(path, start, end)
    numbered = [i for i, line in enumerate(text.splitlines()) if _NUMBERED.match(line)]
    head = numbered[0] if numbered else 0  # the lines before the first numbered one
    first = max(start, 1)
    return clip(text, None, lambda n: f"read_file({path!r}, start={first + n - 1 - head})")


@effect("write")
def write_file(path: str, content: str) -> str:
    """Create a file, or replace its whole content. Prefer edit_file for small changes.

    Args:
        path: file path relative to the project root; missing folders are created
        content: the complete new text of the file
    """
    return _written(_files().write(path, content))


@effect("write")
def edit_file(path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
    """Replace exact text in a file: old_string must occur exactly once (or use replace_all).

    Args:
        path: file path relative to the project root
        old_string: the exact text to replace, indentation included; enough to be unique
        new_string: the text to put in its place
        replace_all: replace every occurrence instead of requiring exactly one
    """
    return _written(_files().edit(path, old_string, new_string, replace_all))


@effect("write")
def apply_patch(patch: str) -> str:
    """Apply a unified diff to one or more files, all or nothing.

    Args:
        patch: a unified diff with '--- a/PATH' / '+++ b/PATH' headers and @@ hunks;
            '--- /dev/null' creates a file
    """
    return "\n".join(_written(change) for change in _files().apply_patch(patch))


def _written(change: Change) -> str:
    counts = _counts(change)
    if change.kind == "file" and change.module != change.target:
        where = f"; module {change.module} patched in memory too, live now"
    else:
        where = ""
    return f"{change.id} wrote {change.target} ({counts}){where}; undo with rollback({change.id!r})"


def _counts(change: Change) -> str:
    added = removed = 0
    for line in change.diff(context=0).splitlines()[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return f"+{added} -{removed} lines"
