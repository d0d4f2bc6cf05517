"""A Python source file as liveforge reads it: text with `\\n` newlines, plus what it takes
to write it back the way it was (encoding from a coding cookie or BOM, newline style, mode)
and a fingerprint to tell whether it changed since.

    loaded = read_source(path)              # SourceFile: text, encoding, newline, mode, ...
    data = encode_source(new_text, loaded)  # bytes in the file's own encoding and newlines
    Fingerprint.of(path)                    # mtime, size, sha256 now (None when gone)
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from liveforge.kernel.errors import PersistError, UndecodableSource

__all__ = [
    "Fingerprint",
    "SourceFile",
    "decode_python",
    "detect_newline",
    "encode_source",
    "read_source",
]

COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)


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
        import hashlib  # here: a cold command that only decodes sources does not pay for it

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
    import hashlib

    fingerprint = Fingerprint(info.st_mtime_ns, len(data), hashlib.sha256(data).hexdigest())
    return SourceFile(
        path, _to_lf(text), encoding, newline, stat.S_IMODE(info.st_mode), fingerprint
    )


def decode_python(data: bytes, path: str) -> tuple[str, str]:
    """The text of Python source bytes and its encoding (coding cookie, BOM or UTF-8);
    `UndecodableSource` naming `path` when the bytes are not text in that encoding."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" not in str(exc.msg):
            # an unknown or conflicting coding cookie
            raise UndecodableSource(path, "its declared encoding", str(exc.msg)) from None
        encoding = "utf-8"  # no cookie, and its first lines are not UTF-8: name the byte
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        detail = f"byte {data[exc.start]:#04x} on line {line}, at byte {exc.start}: {exc.reason}"
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
