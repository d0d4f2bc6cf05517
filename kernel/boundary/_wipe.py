"""Overwriting secrets in a live check's fork, before its snippet runs.

A live check (`_livefork`) runs in a fork of the front end: a copy of its memory, secrets
included. Deleting the secret variables from `os.environ` there is not enough: the
process's initial environment block (what `/proc/self/environ` shows) still holds them, as
do the bytes `os.environ` kept and every copy liveforge made (provider keys, the
scrubbers' values and compiled patterns). The fork is disposable and its pages are its own
(copy-on-write), so `forget_secrets` overwrites them in place; the parent keeps its copies.

- The environment block: the value of each secret variable (by name, or holding a secret
  value this process knows) becomes NUL bytes; the name stays, and so do other variables.
- The C environment (`getenv`): the current value of each is overwritten (a `setenv` made
  its own copy), then the variable is unset.
- `os.environ`: its bytes for each (the same dict as `posix.environ`) are overwritten, then
  the variable is deleted.
- What `_secrets` keeps (`kept_secrets`): held values (the provider keys the configuration
  read are held there), every scrubber's values, pattern sources and compiled patterns;
  then it forgets them (`drop_secrets`): the fork's scrubbers replace nothing, the parent
  scrubs what the fork reports.

This costs well under the fork itself (a fraction of a millisecond to about one): only
these objects and the pages they are on are touched, never the heap as a whole; where the
environment block is and which of its variables are secrets' is read once, at import.
What it does not reach: a program's own objects holding a key (its state, which a live
check sees as it is), transient copies a model call in flight made, and remnants in freed
memory (strings freed earlier), which only reading raw memory (`ctypes`) shows. A check
that must not see them runs as a fresh import only (`live=False`, `--no-live`).
"""

from __future__ import annotations

import bisect
import ctypes
import os
import re
import sys
from collections.abc import Iterable

from liveforge.kernel.boundary._secrets import (
    SECRET_SUFFIXES,
    drop_secrets,
    is_secret_name,
    kept_secrets,
)

__all__ = ["forget_secrets"]

_LIBC = ctypes.CDLL(None)
_LIBC.getenv.restype = ctypes.c_void_p
_LIBC.getenv.argtypes = [ctypes.c_char_p]
_LIBC.strlen.restype = ctypes.c_size_t
_LIBC.strlen.argtypes = [ctypes.c_void_p]

_ASCII_DATA = sys.getsizeof("".join(["ab", "cd"])) - 5
"""Offset of a compact ASCII string's characters from its address."""
_COMPACT_DATA = sys.getsizeof("".join(["\xe9", "a"])) - 3
"""Offset of another compact string's characters."""
_BYTES_DATA = sys.getsizeof(b"") - 1
"""Offset of a bytes object's data."""
_CELLS = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32}
_FILL = ord("*")
_SUFFIXES = tuple(suffix.encode() for suffix in SECRET_SUFFIXES)


def forget_secrets() -> None:
    """Overwrite every secret of this process that liveforge knows of and forget it (see
    the module's text). Only for a fork about to run a snippet: this process's scrubbers
    are emptied and what held a key reads `*` characters afterwards."""
    values, holders = kept_secrets()
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    names = _wipe_environment_block(encoded)
    environ = os.environ._data  # type: ignore[attr-defined]  # bytes -> bytes, on POSIX
    for key, value in environ.items():
        if key.upper().endswith(_SUFFIXES) or any(secret in value for secret in encoded):
            names.add(os.fsdecode(key))
    for name in sorted(names):
        _wipe_c_value(name)
        value = environ.get(os.fsencode(name))
        if isinstance(value, bytes):
            _wipe_bytes(value)
        if name in os.environ:
            del os.environ[name]  # unsets it in the C environment too
        else:
            os.unsetenv(name)
    for held in [*values, *holders]:
        _wipe(held)
    _wipe_all(encoded)
    drop_secrets()


def _wipe(held: object) -> None:
    if isinstance(held, str):
        _wipe_str(held)
    elif isinstance(held, bytes):
        _wipe_bytes(held)
    elif isinstance(held, re.Pattern):
        _wipe_pattern(held)


def _wipe_all(objects: Iterable[object]) -> None:
    for held in objects:
        _wipe(held)


def _wipe_str(text: str) -> bool:
    """Overwrite `text`'s characters with `*`; False (untouched) when it is too short to be
    a private object, or its characters are not where a compact string has them."""
    if len(text) < 2:  # "" and one-character strings are shared by everyone
        return False
    top = ord(max(text))
    width = 1 if top < 0x100 else 2 if top < 0x10000 else 4
    start = id(text) + (_ASCII_DATA if text.isascii() else _COMPACT_DATA)
    cell = _CELLS[width]
    if any(cell.from_address(start + i * width).value != ord(text[i]) for i in _spread(text)):
        return False
    if width == 1:
        ctypes.memset(start, _FILL, len(text))
    else:
        for i in range(len(text)):
            cell.from_address(start + i * width).value = _FILL
    return True


def _wipe_bytes(data: bytes) -> bool:
    """Overwrite `data` with `*` bytes; False when too short to be private (b"", b"x")."""
    if len(data) < 2:
        return False
    start = id(data) + _BYTES_DATA
    if any(ctypes.c_uint8.from_address(start + i).value != data[i] for i in _spread(data)):
        return False
    ctypes.memset(start, _FILL, len(data))
    return True


def _spread(items: str | bytes) -> list[int]:
    """Up to 17 indexes spread over `items`, the first and the last among them: where an
    object's characters are checked before it is overwritten (the checks cost time)."""
    step = max(1, (len(items) - 1) // 16)
    return sorted({*range(0, len(items), step), len(items) - 1})


def _wipe_pattern(pattern: re.Pattern[str] | re.Pattern[bytes]) -> bool:
    """Zero a compiled pattern's program (its literals are the secret's characters): an
    array of 32-bit codes at the end of the object, right after its length. Afterwards
    the pattern matches nothing (code 0 is FAILURE)."""
    kind, word = type(pattern), ctypes.sizeof(ctypes.c_ssize_t)
    if not kind.__itemsize__:
        return False
    count = (pattern.__sizeof__() - kind.__basicsize__) // kind.__itemsize__
    words = (ctypes.c_ssize_t * (kind.__basicsize__ // word)).from_address(id(pattern))
    for slot in reversed(range(3, len(words))):  # after the object's header
        if words[slot] == count:
            ctypes.memset(id(pattern) + word * (slot + 1), 0, count * kind.__itemsize__)
            return True
    return False


def _wipe_c_value(name: str) -> None:
    """Overwrite the C environment's current value of `name` (`getenv`'s string)."""
    address = _LIBC.getenv(os.fsencode(name))
    if address:
        ctypes.memset(address, 0, _LIBC.strlen(address))


def _environment_block() -> tuple[int, list[tuple[int, int, str, bool]]] | None:
    """Where the process's initial environment block is (env_start of /proc/self/stat) and
    its entries: where each value starts and stops, the variable's name, whether the name
    is a secret's. Read once, at import: the block does not move, and a fork has it at the
    same place, so the fork only looks at the values it overwrites."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])
    except (OSError, IndexError, ValueError):
        return None
    if not 0 < start < end:
        return None
    block = ctypes.string_at(start, end - start)
    entries = []
    position = 0
    while position < len(block):
        stop = block.find(b"\0", position)
        stop = len(block) if stop < 0 else stop
        equals = block.find(b"=", position, stop)
        if equals > position:
            name = os.fsdecode(block[position:equals])
            entries.append((equals + 1, stop, name, is_secret_name(name)))
        position = stop + 1
    _wipe_bytes(block)  # this copy leaves no remnant
    return start, entries


_BLOCK = _environment_block()


def _wipe_environment_block(secrets: list[bytes]) -> set[str]:
    """NUL out the value of each secret `NAME=value` of the initial environment block (by
    name, or holding one of `secrets`); the names of the variables overwritten."""
    if _BLOCK is None or not _BLOCK[1]:
        return set()
    start, entries = _BLOCK
    chosen = {i for i, entry in enumerate(entries) if entry[3]}
    if secrets:
        block = ctypes.string_at(start, entries[-1][1])
        starts = [entry[0] for entry in entries]
        for secret in secrets:
            at = block.find(secret)
            while at >= 0:
                i = bisect.bisect_right(starts, at) - 1
                if i >= 0 and at + len(secret) <= entries[i][1]:
                    chosen.add(i)
                at = block.find(secret, at + 1)
        _wipe_bytes(block)
    found = set()
    for i in chosen:
        value, stop, name, _ = entries[i]
        if ctypes.c_char.from_address(start + value - 1).value == b"=":  # laid out as read
            ctypes.memset(start + value, 0, stop - value)
            found.add(name)
    return found
