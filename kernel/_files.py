"""Persistence primitives: read sources faithfully, write them atomically, undo a write.

    loaded = read_source(path)                       # encoding, newline style, mode, fingerprint
    record = persist_files(root, [PlannedWrite(path, new_text, loaded=loaded, module="pkg.mod")])
    restore(record)                                  # puts back exactly what was overwritten

Every write goes to a temporary file in the destination's directory, is fsynced, renamed over
the destination and the directory is fsynced: a reader (or a crash) sees the old content or
the new one, never a mix. A batch is validated completely (paths, conflicts, encodability)
before the first file is touched, and a failure while writing undoes the files already written.
"""

from __future__ import annotations

import codecs
import difflib
import glob
import hashlib
import io
import keyword
import os
import re
import shutil
import stat
import tempfile
import time
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from liveforge.kernel.errors import PersistConflict, PersistError, UndecodableSource, UnsafePath

COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
TEMP_SUFFIX = ".liveforge-tmp"
STALE_AFTER = 60.0  # seconds; no write takes that long, so its temporary file is a leftover


@dataclass(frozen=True)
class Fingerprint:
    """What a file looked like: modification time, size and content hash."""

    mtime_ns: int
    size: int
    sha256: str

    @classmethod
    def of(cls, path: str | Path) -> Fingerprint | None:
        """The file's current fingerprint, or None when it does not exist."""
        try:
            data = Path(path).read_bytes()
            info = os.stat(path)
        except FileNotFoundError:
            return None
        return cls(info.st_mtime_ns, len(data), hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class SourceFile:
    """A source file as loaded: text with `\\n` newlines plus how to write it back."""

    path: Path
    text: str
    encoding: str
    newline: str
    mode: int
    fingerprint: Fingerprint


def read_source(path: str | Path) -> SourceFile:
    """Read a Python source file, remembering encoding (cookie or BOM), newlines and mode."""
    path = Path(path)
    data = path.read_bytes()
    info = path.stat()
    text, encoding = decode_python(data, str(path))
    newline = detect_newline(text)
    fingerprint = Fingerprint(info.st_mtime_ns, len(data), hashlib.sha256(data).hexdigest())
    return SourceFile(
        path, _to_lf(text), encoding, newline, stat.S_IMODE(info.st_mode), fingerprint
    )


def decode_python(data: bytes, path: str) -> tuple[str, str]:
    """The text of Python source bytes and its encoding (coding cookie, BOM or UTF-8);
    `UndecodableSource` naming `path` when the bytes are not text in that encoding."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:  # an unknown or conflicting coding cookie
        raise UndecodableSource(path, "its declared encoding", str(exc.msg)) from None
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        detail = f"byte {data[exc.start]:#04x} on line {line}: {exc.reason}"
        raise UndecodableSource(path, encoding, detail) from None


def detect_newline(text: str) -> str:
    """The newline style of the first line ending in `text` ("\\n" when there is none)."""
    match = re.search(r"\r\n|\n|\r", text)
    return match.group() if match else "\n"


def _to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def encode_source(
    text: str, like: SourceFile | None = None, *, path: str | Path = "", module: str = ""
) -> bytes:
    """`text` as the bytes to store: `like`'s newline style and encoding.

    A coding cookie in the text itself wins over `like`'s encoding; a BOM is kept when the
    loaded file had one and the text does not ask for another encoding.
    """
    newline = like.newline if like else "\n"
    body = _to_lf(text).replace("\n", newline)
    encoding = _declared_encoding(body) or (like.encoding if like else "utf-8")
    if like and like.encoding == "utf-8-sig" and codecs.lookup(encoding).name == "utf-8":
        encoding = "utf-8-sig"
    try:
        return body.encode(encoding)
    except UnicodeEncodeError as exc:
        line = body.count("\n", 0, exc.start) + 1
        raise PersistError(
            f"{path or module}: line {line} has {exc.object[exc.start : exc.end]!r}, which the "
            f"file's encoding {encoding!r} cannot store. Change the coding cookie or the text.",
            path=str(path),
            module=module,
        ) from exc


def _declared_encoding(text: str) -> str | None:
    """The PEP 263 coding cookie of the first two lines, if any."""
    lines = text.encode("utf-8", "surrogateescape").splitlines()[:2]
    for number, line in enumerate(lines):
        match = COOKIE.match(line)
        if match:
            return codecs.lookup(match.group(1).decode()).name
        if number == 0 and line.strip() and not line.lstrip().startswith(b"#"):
            return None
    return None


def atomic_write(
    path: str | Path,
    content: str | bytes,
    *,
    like: SourceFile | None = None,
    mode: int | None = None,
) -> Fingerprint:
    """Replace `path` with `content` atomically; returns the new fingerprint.

    Text is encoded like `like` (see `encode_source`). The mode is `mode`, else `like`'s, else
    the existing file's, else the default for new files (0o666 minus the umask).
    """
    path = Path(path)
    data = content if isinstance(content, bytes) else encode_source(content, like, path=path)
    if mode is None:
        mode = like.mode if like else _existing_mode(path)
    _sweep_stale_temporaries(path)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)
    fingerprint = Fingerprint.of(path)
    assert fingerprint is not None
    return fingerprint


def _sweep_stale_temporaries(path: Path) -> None:
    """Remove temporary files of `path` left by a writer that was killed mid-write."""
    cutoff = time.time() - STALE_AFTER
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*{TEMP_SUFFIX}"):
        try:
            if leftover.stat().st_mtime < cutoff:
                leftover.unlink()
        except OSError:
            continue  # already gone, or not ours to remove


def _existing_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_directory(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def safe_destination(project_root: str | Path, path: str | Path) -> Path:
    """The real path to write for `path`, refusing anything that leaves the project root.

    Relative paths are taken from the root. Refused (`UnsafePath`): `..` components, absolute
    paths outside the root, and symlinks (in the directories or the file itself) that lead
    outside it.
    """
    root = Path(os.path.realpath(project_root))
    given = Path(path)
    if ".." in given.parts:
        raise UnsafePath(
            f"{str(path)!r} contains '..'; give a path inside the project root "
            f"{root} without '..'.",
            path=str(path),
        )
    candidate = given if given.is_absolute() else root / given
    lexical = Path(os.path.normpath(candidate))
    roots = (root, Path(os.path.abspath(project_root)))
    if not any(lexical.is_relative_to(r) for r in roots):
        raise UnsafePath(
            f"{str(path)!r} is outside the project root {root}; liveforge only "
            "writes files inside the project.",
            path=str(path),
        )
    real = Path(os.path.realpath(candidate))
    if not real.is_relative_to(root):
        raise UnsafePath(
            f"{str(path)!r} leads through a symlink to {real}, outside the project "
            f"root {root}; liveforge refuses to write there.",
            path=str(path),
        )
    return real


def module_path_for(project_root: str | Path, dotted_name: str, is_package: bool) -> Path:
    """Where module `dotted_name` lives under the root (`a/b.py` or `a/b/__init__.py`)."""
    parts = dotted_name.split(".")
    if not all(part.isidentifier() and not keyword.iskeyword(part) for part in parts):
        raise UnsafePath(
            f"{dotted_name!r} is not a valid dotted module name; each part must be "
            "a Python identifier.",
            module=dotted_name,
        )
    base = Path(project_root).joinpath(*parts)
    return base / "__init__.py" if is_package else base.with_suffix(".py")


def check_unchanged(path: str | Path, loaded: SourceFile, *, module: str = "") -> None:
    """Raise `PersistConflict` (with a diff) if the file differs from what was loaded."""
    current = Fingerprint.of(path)
    if current is not None and current.sha256 == loaded.fingerprint.sha256:
        return
    label = module or str(path)
    if current is None:
        raise PersistConflict(
            f"{label}: {path} was deleted since liveforge loaded it. Restore the file, or "
            "persist with force=True to write it anew.",
            path=str(path),
            module=module,
        )
    disk = read_source(path).text
    diff = "".join(
        difflib.unified_diff(
            loaded.text.splitlines(keepends=True),
            disk.splitlines(keepends=True),
            fromfile=f"{path} (as loaded)",
            tofile=f"{path} (on disk now)",
        )
    )
    raise PersistConflict(
        f"{label}: {path} changed on disk since liveforge loaded it; writing would lose that "
        f"edit. Reload or merge it, or persist with force=True to overwrite.\n{diff}",
        path=str(path),
        module=module,
        diff=diff,
    )


@dataclass(frozen=True)
class PlannedWrite:
    """One file to write: the new text, and the version it replaces (None for a new file)."""

    path: Path
    text: str
    loaded: SourceFile | None = None
    module: str = ""


@dataclass
class WriteBackup:
    """What one write replaced, so that it can be put back."""

    path: Path
    module: str
    old_bytes: bytes | None
    old_mode: int | None
    new_fingerprint: Fingerprint | None = None
    created: list[Path] = field(default_factory=list)


@dataclass
class PersistRecord:
    """The backups of one persist, in the order the files were written."""

    backups: list[WriteBackup] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        return [backup.path for backup in self.backups]


def persist_files(
    project_root: str | Path, writes: Sequence[PlannedWrite], *, force: bool = False
) -> PersistRecord:
    """Write a batch of sources all-or-nothing; returns the record that `restore` undoes.

    Everything is checked before the first write: destinations inside the root, no conflict
    with the loaded version (or an existing file for a new module) unless `force`, text
    encodable. Directories created for new modules get an empty `__init__.py` unless the batch
    writes one.
    """
    plans = [_prepare(project_root, write, force) for write in writes]
    inits = {dest for dest, _, _ in plans if dest.name == "__init__.py"}
    root = Path(os.path.realpath(project_root))
    record = PersistRecord()
    try:
        for dest, data, write in plans:
            backup = _backup(dest, write.module)
            record.backups.append(backup)
            backup.created = _make_packages(root, dest.parent, inits)
            mode = write.loaded.mode if write.loaded else None
            backup.new_fingerprint = atomic_write(dest, data, mode=mode)
    except BaseException as exc:
        restore(record, force=True)
        if isinstance(exc, OSError):
            raise PersistError(
                f"writing {exc.filename or 'a file'} failed ({exc.strerror}); "
                "every file of this persist was put back."
            ) from exc
        raise
    return record


def _prepare(
    project_root: str | Path, write: PlannedWrite, force: bool
) -> tuple[Path, bytes, PlannedWrite]:
    try:
        dest = safe_destination(project_root, write.path)
    except UnsafePath as exc:
        if not write.module:
            raise
        raise UnsafePath(
            f"module {write.module}: {exc} Nothing was written; leave it out "
            "(persist(modules=[...]) with the others) or roll it back.",
            path=str(write.path),
            module=write.module,
        ) from None
    if not force and write.loaded is not None:
        check_unchanged(dest, write.loaded, module=write.module)
    elif not force and dest.exists():
        raise PersistConflict(
            f"{write.module or dest}: {dest} already exists on disk but liveforge holds this "
            "module only in memory. Move the file away, or persist with force=True to "
            "overwrite it.",
            path=str(dest),
            module=write.module,
        )
    return dest, encode_source(write.text, write.loaded, path=dest, module=write.module), write


def _backup(dest: Path, module: str) -> WriteBackup:
    try:
        return WriteBackup(dest, module, dest.read_bytes(), stat.S_IMODE(dest.stat().st_mode))
    except FileNotFoundError:
        return WriteBackup(dest, module, None, None)


def _make_packages(root: Path, folder: Path, inits: set[Path]) -> list[Path]:
    """Create `folder` and missing parents; new ones get `__init__.py` unless planned."""
    missing = []
    current = folder
    while not current.exists() and current != root and current.is_relative_to(root):
        missing.append(current)
        current = current.parent
    created: list[Path] = []
    for directory in reversed(missing):
        directory.mkdir()
        created.append(directory)
        init = directory / "__init__.py"
        if init not in inits:
            atomic_write(init, b"")
            created.append(init)
    return created


def restore(record: PersistRecord, *, force: bool = False) -> None:
    """Undo a persist: put back each overwritten file, remove created files and folders.

    Refuses (`PersistConflict`) when a written file changed again since, unless `force`.
    """
    if not force:
        for backup in record.backups:
            current = Fingerprint.of(backup.path)
            expected = backup.new_fingerprint
            if expected is not None and (current is None or current.sha256 != expected.sha256):
                raise PersistConflict(
                    f"{backup.module or backup.path}: {backup.path} changed after it was "
                    "persisted; undoing would lose that edit. Pass force=True to undo anyway.",
                    path=str(backup.path),
                    module=backup.module,
                )
    for backup in reversed(record.backups):
        if backup.old_bytes is not None:
            backup.path.parent.mkdir(parents=True, exist_ok=True)  # its folder was removed
            atomic_write(backup.path, backup.old_bytes, mode=backup.old_mode)
        else:
            backup.path.unlink(missing_ok=True)
        for created in reversed(backup.created):
            if created.is_dir():
                _remove_if_empty(created)
            else:
                created.unlink(missing_ok=True)


def _remove_if_empty(folder: Path) -> None:
    shutil.rmtree(folder / "__pycache__", ignore_errors=True)  # left by importing the module
    try:
        folder.rmdir()
    except OSError:
        pass  # something else lives there now; leave it
