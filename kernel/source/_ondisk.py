"""The disk is re-read, not assumed: a managed module's file as it is now, against the
version liveforge last read or wrote (`ModuleRecord.loaded`).

    now = on_disk(record)          # the file now (the loaded version when unchanged)
    note = resync(record)          # the file changed and now holds what memory runs: adopt it

Another tool may change a file at any time (``git checkout``, an editor, a formatter). The
cheap check is the file's modification time and size against the loaded fingerprint; only
when they differ is the file read and its content hash compared. A file that now holds
exactly what memory runs is adopted as the loaded version (nothing can be lost by that); a
file that holds something else is left for `persist` to refuse as a conflict (with the diff)
and for `reload` to take, while checks carry what memory runs and `diff` shows the real file.
"""

from __future__ import annotations

import os

from liveforge.kernel.errors import UndecodableSource
from liveforge.kernel.files._sourcefile import SourceFile, read_source
from liveforge.kernel.source._sources import ModuleRecord

__all__ = ["changed_on_disk", "differs_from_disk", "disk_text", "on_disk", "resync"]


def changed_on_disk(record: ModuleRecord) -> bool:
    """True when the module's file is not what liveforge last read or wrote (by content;
    a file that is gone counts as changed)."""
    loaded = record.loaded
    if record.virtual or loaded is None:
        return False
    try:
        info = os.stat(record.filename)
    except OSError:
        return True
    known = loaded.fingerprint
    if (info.st_mtime_ns, info.st_size) == (known.mtime_ns, known.size):
        return False
    now = _read(record)
    return now is None or now.fingerprint.sha256 != known.sha256


def on_disk(record: ModuleRecord) -> SourceFile | None:
    """The module's file as it is now (the loaded version when unchanged); None when it is
    gone, unreadable, or the module is virtual."""
    if record.virtual or record.loaded is None:
        return None
    return _read(record) if changed_on_disk(record) else record.loaded


def disk_text(record: ModuleRecord) -> str | None:
    """The text of the module's file now (see `on_disk`)."""
    now = on_disk(record)
    return now.text if now is not None else None


def differs_from_disk(record: ModuleRecord) -> bool:
    """True when what memory runs is not what the module's file holds now (always for a
    virtual module): what a check must carry, and what `diff` shows."""
    if record.virtual or record.dirty:
        return True
    return changed_on_disk(record) and disk_text(record) != record.source


def resync(record: ModuleRecord) -> str | None:
    """When the file changed on disk since liveforge last read or wrote it and now holds
    exactly what memory runs, take it as the loaded version; returns a note saying so (None
    when nothing was adopted)."""
    if not changed_on_disk(record):
        return None
    now = _read(record)
    if now is None or now.text != record.source:
        return None
    record.loaded = now
    return (
        f"{record.filename} changed on disk since liveforge last read or wrote it, and now "
        f"holds the code {record.name} runs"
    )


def _read(record: ModuleRecord) -> SourceFile | None:
    try:
        return read_source(record.filename)
    except (OSError, UndecodableSource):
        return None
