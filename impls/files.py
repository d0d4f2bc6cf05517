"""Default behaviour of `Files`: confined paths, numbered reads, exact edits, unified diffs.

Edits work on text with ``\\n`` line endings (the runtime writes the file back in its own
newline style). A file of a loaded Python module is read from memory, which is what runs and,
for a module without unpersisted changes, what the file holds.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from pathlib import Path

import forwardpy
import whatthepatch
from whatthepatch.exceptions import HunkApplyException, WhatThePatchException

from liveforge.declarations.files import EditRefused, Files
from liveforge.kernel import Change
from liveforge.kernel.errors import UnsafePath
from liveforge.kernel.runtime._filewrites import confined, read_text
from liveforge.tools._output import number_lines

__all__: list[str] = []

_DEV_NULL = "/dev/null"


def _text(files: Files, path: Path) -> str:
    """A file's text with ``\\n`` newlines; a clear error for folders, binaries and size."""
    label = str(path)
    if path.is_dir():
        raise EditRefused(f"{label} is a folder; give a file path.", path=label)
    if not path.exists():
        raise EditRefused(
            f"{label} does not exist; write_file creates a file, read_file needs one.",
            path=label,
        )
    size = path.stat().st_size
    if size > files.settings.max_read_bytes:
        raise EditRefused(
            f"{label} has {size} bytes, over the {files.settings.max_read_bytes}-byte limit of "
            "the file tools; look at parts of it with exec (head, sed -n, grep).",
            path=label,
        )
    try:
        text = read_text(path)
    except UnicodeDecodeError:
        raise EditRefused(
            f"{label} is not UTF-8 text (a binary file?); the file tools handle text only.",
            path=label,
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


_HOW_TO_ALLOW_PATHS = (
    "The user can let the file tools use another folder by adding it to `allow_paths` "
    "under [tool.liveforge.tools.files] in pyproject.toml; then give the file's absolute path."
)


@forwardpy.impl(Files.resolve)
def resolve(self: Files, path: str) -> Path:
    try:
        return confined(self.runtime.project_root, path, self.settings.allow_paths)
    except UnsafePath as exc:
        raise UnsafePath(f"{exc} {_HOW_TO_ALLOW_PATHS}", path=exc.path) from None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _remember(files: Files, dest: Path, text: str) -> str:
    """Note that the agent has seen `text` as the content of `dest`; returns `text`."""
    if files.seen is not None:
        files.seen[str(dest)] = _digest(text)
    return text


def _unchanged_text(files: Files, path: str) -> str:
    """The text of `path` to edit; refused when it changed since the agent last read or
    wrote it (an edit made against text the model no longer has would be blind)."""
    dest = files.resolve(path)
    text = _text(files, dest)
    known = files.seen.get(str(dest)) if files.seen is not None else None
    if known is not None and known != _digest(text):
        raise EditRefused(
            f"{path} changed since you last read or wrote it (by another program, a person, "
            "or a rollback); nothing was written. read_file it again and make the "
            "edit against its current text.",
            path=path,
        )
    return text


@forwardpy.impl(Files.read)
def read(self: Files, path: str, start: int = 1, end: int | None = None) -> str:
    dest = self.resolve(path)
    lines = _remember(self, dest, _text(self, dest)).splitlines(keepends=True)
    if not lines:
        return f"{path}: empty file"
    first = max(start, 1)
    last = len(lines) if end is None else min(end, len(lines))
    if first > len(lines) or last < first:
        return f"{path} has {len(lines)} lines; ask for start between 1 and {len(lines)}."
    head = f"{path} lines {first}-{last} of {len(lines)}\n" + _stale_note(self, path)
    return head + number_lines([line.rstrip("\n") for line in lines[first - 1 : last]], first)


def _stale_note(files: Files, path: str) -> str:
    """A line saying the running module differs from this file, when it does."""
    rt = files.runtime
    module = rt.module_for_file(files.resolve(path))
    record = rt.registry.get(module) if module else None
    if record is None or not record.dirty:
        return ""
    return (
        f"(module {module} has changes in memory not in this file: view_source('{module}') "
        "shows what runs; persist or rollback before editing the file)\n"
    )


@forwardpy.impl(Files.write)
def write(self: Files, path: str, content: str) -> Change:
    dest = self.resolve(path)
    if dest.is_dir():
        raise EditRefused(f"{path or '.'} is a folder; give the path of a file.", path=path)
    change = self.runtime.write_file(dest, content, roots=self.settings.allow_paths)
    _remember(self, dest, _text(self, dest))
    return change


@forwardpy.impl(Files.edit)
def edit(self: Files, path: str, old: str, new: str, replace_all: bool = False) -> Change:
    return self.write(path, self.edited(path, old, new, replace_all))


@forwardpy.impl(Files.edited)
def edited(self: Files, path: str, old: str, new: str, replace_all: bool = False) -> str:
    text = _unchanged_text(self, path)
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    if not old:
        raise EditRefused("old_string is empty; give the exact text to replace.", path=path)
    count = text.count(old)
    if count == 0:
        raise EditRefused(
            f"old_string was not found in {path}; read_file it and copy the text exactly "
            "(indentation and line breaks included).",
            path=path,
        )
    if count > 1 and not replace_all:
        lines = _lines_of(text, old)
        raise EditRefused(
            f"old_string occurs {count} times in {path} (lines {lines}); include more of the "
            "surrounding text so it matches once, or pass replace_all=true.",
            path=path,
        )
    if old == new:
        raise EditRefused("old_string and new_string are the same; nothing to do.", path=path)
    return text.replace(old, new) if replace_all else text.replace(old, new, 1)


def _lines_of(text: str, needle: str) -> str:
    found: list[str] = []
    at = text.find(needle)
    while at >= 0 and len(found) < 10:
        found.append(str(text.count("\n", 0, at) + 1))
        at = text.find(needle, at + 1)
    return ", ".join(found)


@forwardpy.impl(Files.apply_patch)
def apply_patch(self: Files, patch: str) -> list[Change]:
    planned = self.patched(patch)
    with self.runtime.transaction() as changes:  # a failing write undoes the earlier ones
        for path, text in planned.items():
            self.write(path, text)
    return list(changes)


@forwardpy.impl(Files.patched)
def patched(self: Files, patch: str) -> dict[str, str]:
    planned: dict[str, str] = {}  # path -> text after the diffs so far (a file may recur)
    for diff in _parse(patch):
        path, text = _planned(self, diff, planned)
        planned[path] = text
    return planned


@forwardpy.impl(Files.preview)
def preview(self: Files, planned: dict[str, str]) -> str:
    parts = []
    for path, text in planned.items():
        dest = self.resolve(path)
        before = _text(self, dest) if dest.exists() else None
        old_name = "/dev/null" if before is None else f"a/{path}"
        lines = difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=old_name,
            tofile=f"b/{path}",
        )
        parts.append("".join(_ended(line) for line in lines) or f"{path}: no change\n")
    return "".join(parts)


def _ended(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"


_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _per_file(patch: str) -> list[str]:
    """The patch cut into one text per file (whatthepatch needs a ``diff`` line between
    files otherwise); hunk line counts keep a removed ``-- x`` line from cutting."""
    chunks: list[list[str]] = [[]]
    old = new = 0
    lines = patch.splitlines(keepends=True)
    for number, line in enumerate(lines):
        if old <= 0 and new <= 0:
            following = lines[number + 1] if number + 1 < len(lines) else ""
            header = line.startswith("--- ") and following.startswith("+++ ")
            starts = line.startswith("diff ") or (
                header and not (chunks[-1] and chunks[-1][-1].startswith("diff "))
            )
            if starts and any(x.startswith("@@") for x in chunks[-1]):
                chunks.append([])
            match = _HUNK.match(line)
            if match:
                old, new = (int(g) if g is not None else 1 for g in match.groups())
        elif line[:1] in (" ", "\n", "\r"):
            old, new = old - 1, new - 1
        elif line[:1] == "-":
            old -= 1
        elif line[:1] == "+":
            new -= 1
        chunks[-1].append(line)
    return ["".join(chunk) for chunk in chunks if chunk]


def _parse(patch: str) -> list[whatthepatch.patch.diffobj]:
    try:
        diffs = [
            d
            for chunk in _per_file(patch)
            for d in whatthepatch.parse_patch(chunk)
            if d.header and d.changes
        ]
    except WhatThePatchException as exc:
        raise EditRefused(f"the patch cannot be read: {exc}; send a unified diff.") from None
    if not diffs:
        raise EditRefused(
            "no file diff found in the patch; send a unified diff with '--- a/PATH' and "
            "'+++ b/PATH' headers and '@@ -l,n +l,n @@' hunks."
        )
    return diffs


def _planned(
    files: Files, diff: whatthepatch.patch.diffobj, pending: dict[str, str]
) -> tuple[str, str]:
    """The file a diff changes and its text after the diff (on top of ``pending``, the texts
    earlier diffs of the same patch made); refused if a hunk does not fit."""
    old_path, new_path = diff.header.old_path, diff.header.new_path
    if new_path == _DEV_NULL:
        raise EditRefused(f"the patch deletes {old_path}; the file tools do not delete files.")
    if old_path not in (_DEV_NULL, new_path):
        raise EditRefused(f"the patch renames {old_path} to {new_path}; renames are not applied.")
    creating = old_path == _DEV_NULL
    if new_path in pending:
        before = [] if creating else pending[new_path].split("\n")
    else:
        before = [] if creating else _unchanged_text(files, new_path).split("\n")
    if creating and (new_path in pending or files.resolve(new_path).exists()):
        raise EditRefused(f"the patch creates {new_path}, which already exists.", path=new_path)
    try:
        after = whatthepatch.apply_diff(diff, before)
    except HunkApplyException as exc:
        raise EditRefused(
            f"the patch does not apply to {new_path}: {exc}. Nothing was written; read_file "
            "the current text and make the diff against it (or use edit_file).",
            path=new_path,
        ) from None
    text = "\n".join(after)
    return new_path, text + "\n" if creating and after else text
