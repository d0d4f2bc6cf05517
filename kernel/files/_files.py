"""Writing one file safely: atomically, inside the project root, and only over the version
that was loaded.

    dest = safe_destination(root, "pkg/mod.py")     # UnsafePath for `..`, outside, symlinks
    check_unchanged(dest, loaded, module="pkg.mod")  # PersistConflict (with a diff) if edited
    atomic_write(dest, new_text, like=loaded)        # the new Fingerprint

Every write goes to a temporary file in the destination's directory, is fsynced, renamed over
the destination and the directory is fsynced: a reader (or a crash) sees the old content or
the new one, never a mix. Writing a batch all-or-nothing, and undoing it, is `_filebatch`.
"""

from __future__ import annotations

import difflib
import glob
import keyword
import os
import stat
import tempfile
import time
from pathlib import Path

from liveforge.kernel.errors import PersistConflict, UnsafePath
from liveforge.kernel.files._sourcefile import Fingerprint, SourceFile, encode_source, read_source

__all__ = [
    "TEMP_SUFFIX",
    "atomic_write",
    "check_unchanged",
    "module_path_for",
    "safe_destination",
]

TEMP_SUFFIX = ".liveforge-tmp"
STALE_AFTER = 60.0  # seconds; no write takes that long, so its temporary file is a leftover


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
