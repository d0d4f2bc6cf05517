"""Capped capture of a child's output stream into a record file.

The parent reads the child's stdout/stderr pipes chunk by chunk. The first `head_bytes` go to
the file as they arrive; after that only the last `tail_bytes` are kept in a ring, and the
dropped middle is replaced by a marker when the sink is closed. The parent therefore never
holds more than `tail_bytes` (plus a small excerpt) of a run's output, however much the child
prints. The file is created on the first byte: a silent stream leaves no file. With a
`Scrubber`, secret values are replaced before any byte reaches the file or memory (the last
few bytes wait for the next chunk, so a value split across chunks is caught too).
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from liveforge.kernel.boundary._secrets import Scrubber

MARKER = "\n[... liveforge truncated {dropped} bytes of output ...]\n"
EXCERPT = 32 << 10


class CappedSink:
    """Writes a stream to `path`, keeping its head and tail and dropping the middle."""

    def __init__(
        self,
        path: Path,
        *,
        head_bytes: int = 1 << 20,
        tail_bytes: int = 64 << 10,
        scrubber: Scrubber | None = None,
    ) -> None:
        self.path = path
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.file: BinaryIO | None = None
        self.written = 0
        self.tail = bytearray()
        self.dropped = 0
        self.memory: bytearray | None = bytearray()  # the whole stream while it is short
        self.scrubber = scrubber if scrubber else None
        self.held = b""  # scrubbed bytes that may still begin a secret

    def write(self, chunk: bytes) -> None:
        """Take the next chunk of the stream."""
        if self.scrubber is None:
            self._take(chunk)
            return
        data = self.scrubber.bytes(self.held + chunk)
        keep = self.scrubber.longest - 1
        self.held = data[-keep:] if keep else b""
        self._take(data[: len(data) - len(self.held)])

    def _take(self, chunk: bytes) -> None:
        if self.memory is not None:
            self.memory += chunk
            if len(self.memory) > EXCERPT:
                self.memory = None
        if not chunk:
            return
        if self.file is None:
            self.file = self.path.open("wb")
        room = self.head_bytes - self.written
        if room > 0:
            self.file.write(chunk[:room])
            self.file.flush()  # the record shows the output while the run goes on
            self.written += min(room, len(chunk))
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_bytes
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    @property
    def total(self) -> int:
        """Bytes received so far."""
        return self.written + self.dropped + len(self.tail)

    def close(self) -> None:
        """Write the marker and the kept tail, and close the file."""
        if self.held:
            held, self.held = self.held, b""
            self._take(held)
        if self.file is None or self.file.closed:
            return
        if self.dropped:
            self.file.write(MARKER.format(dropped=self.dropped).encode())
        self.file.write(bytes(self.tail))
        self.file.close()

    def text(self) -> str:
        """The stream for a result: whole when short, else an excerpt of the file."""
        if self.memory is not None:
            return self.memory.decode("utf-8", "replace")
        return excerpt(self.path)


def excerpt(path: Path, limit: int = EXCERPT) -> str:
    """The file's text for a result: up to `limit` bytes of head and tail with a marker."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return ""
    with path.open("rb") as file:
        if size <= limit:
            return file.read().decode("utf-8", "replace")
        head = file.read(limit // 2)
        file.seek(size - limit // 2)
        tail = file.read()
    skipped = size - len(head) - len(tail)
    marker = f"\n[... truncated: {skipped} bytes not shown; the capture is in {path} ...]\n"
    return head.decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace")
