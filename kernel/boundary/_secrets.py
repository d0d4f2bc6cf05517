"""Secrets: which environment variables hold them, and scrubbing their values from text.

A variable is a secret when its name ends in `_API_KEY`, `_API_KEYS` or `_TOKEN` (the
provider keys liveforge reads) or in `_SECRET`, `_SECRET_KEY`, `_SECRET_ACCESS_KEY` or
`_PASSWORD` (the usual names of other credentials, such as `AWS_SECRET_ACCESS_KEY`).
Sandbox children do not get them, and neither do variables holding a value registered with
`register_secrets` or `hold` (keys read from variables with other names, such as a provider's
`api_key_env`).

This module keeps each secret value it knows as one private copy: `hold(value)` registers
a value and returns that copy, and holders keep it (the configuration's `SecretStr` keys,
sessions' secret lists), as the `Scrubber`s keep copies of their own. So every copy
liveforge keeps is known here (`kept_secrets`), and a live check's fork overwrites them all
before its snippet runs (`_wipe`).

`Scrubber` replaces secret values in text or bytes in every form a program might print
them in: verbatim, with repr or JSON escapes, URL-encoded, hex, and as base64 (standard and
URL-safe, at any alignment inside a longer encoded text):

    scrub = Scrubber.current()            # the environment's secrets and registered values
    scrub.text(record_text)               # "... [redacted] ..."

Run records, `--json` output, transcripts, tool results and MCP results all go through it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import ClassVar
from urllib.parse import quote, quote_plus

__all__ = [
    "REDACTED",
    "Scrubber",
    "drop_secrets",
    "environment_secrets",
    "hold",
    "is_secret_name",
    "kept_secrets",
    "register_secrets",
    "scrub",
    "without_secrets",
]

SECRET_SUFFIXES = (
    "_API_KEY",
    "_API_KEYS",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_SECRET_ACCESS_KEY",
    "_PASSWORD",
)
REDACTED = "[redacted]"
MIN_SECRET = 8
"""Shorter values are not scrubbed: they would match ordinary text."""
MIN_FRAGMENT = 8
"""Shortest base64 fragment that still counts as the secret."""

_held: dict[str, str] = {}
"""Registered secret values, each mapped to itself: the one private copy this process keeps."""
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    """True for environment variable names that hold credentials."""
    return name.upper().endswith(SECRET_SUFFIXES)


def _private(value: str) -> str:
    """A new copy of `value` (of MIN_SECRET or more characters) that nothing else holds, made
    without an intermediate copy of the whole value."""
    return "".join(list(value))


def hold(value: str) -> str:
    """Treat `value` as a secret in this process from now on (scrubbed everywhere, and a
    variable holding it is not passed to sandbox runs), and return this process's one copy
    of it: keep that copy instead of `value`, and a live check's fork overwrites it before
    its snippet runs. A value shorter than MIN_SECRET is no secret here: returned as is."""
    if len(value) < MIN_SECRET:
        return value
    with _lock:
        kept = _held.get(value)
        if kept is None:
            kept = _private(value)
            _held[kept] = kept
        return kept


def register_secrets(values: Iterable[str]) -> list[str]:
    """`hold` each of `values`; the copies to keep, in order."""
    return [hold(v) for v in values]


def environment_secrets(env: Mapping[str, str] | None = None) -> list[str]:
    """Secret values in `env` (default: this process's environment) plus registered ones;
    comma-separated key lists count as several values."""
    env = os.environ if env is None else env
    found = set(_held)
    for name, value in env.items():
        if is_secret_name(name):
            found.update(part.strip() for part in value.split(","))
    return sorted(v for v in found if len(v) >= MIN_SECRET)


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of `env` without the secret variables (by name or by registered value)."""
    registered = list(_held)
    return {
        name: value
        for name, value in env.items()
        if not is_secret_name(name) and not any(s in value for s in registered)
    }


def start_helper(
    argv: list[str], keep_fd: int, cwd: str | os.PathLike[str] | None = None
) -> subprocess.Popen[bytes]:
    """Start one of liveforge's helper processes (the sandbox template, the live checks'
    host maker): `argv` in a session of its own, without standard streams, from an
    environment without secrets, given the descriptor `keep_fd` (its end of a socket)."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        pass_fds=[keep_fd],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=without_secrets(os.environ),
    )


def encodings(secret: str) -> set[str]:
    """The forms `secret` takes when a program prints it through a common encoding."""
    raw = secret.encode("utf-8")
    forms = {
        secret,
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
        repr(raw)[2:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        raw.hex(),
        raw.hex().upper(),
    }
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms.update(_base64_fragments(raw, encode))
    return {form for form in forms if len(form) >= MIN_SECRET}


def _base64_fragments(raw: bytes, encode: object) -> set[str]:
    """The base64 characters determined by `raw` alone, at each of the three alignments
    it can have inside a longer encoded text."""
    fragments = set()
    for offset in range(3):
        encoded = encode(b"\0" * offset + raw).decode("ascii")  # type: ignore[operator]
        start = -(-8 * offset // 6)  # the first character made of secret bits only
        end = 8 * (offset + len(raw)) // 6
        fragments.add(encoded[start:end])
    return {f for f in fragments if len(f) >= MIN_FRAGMENT}


class Scrubber:
    """Replaces secret values, in all their encodings, by `[redacted]`."""

    _cache: ClassVar[dict[tuple[str, ...], Scrubber]] = {}
    _made: ClassVar[weakref.WeakSet[Scrubber]] = weakref.WeakSet()
    """Every scrubber alive: `kept_secrets` names what they keep."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # private copies: what the scrubber keeps is its own (see `kept_secrets`)
        unique = {s for s in secrets if len(s) >= MIN_SECRET}
        self.secrets = tuple(sorted(_private(s) for s in unique))
        Scrubber._made.add(self)
        forms = sorted({f for s in self.secrets for f in encodings(s)}, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, forms))) if forms else None
        self._bytes = re.compile(b"|".join(re.escape(f.encode()) for f in forms)) if forms else None
        self.longest = max((len(f.encode()) for f in forms), default=0)

    @classmethod
    def of(cls, secrets: Iterable[str]) -> Scrubber:
        """The scrubber for `secrets`, built once per distinct set."""
        key = tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET}))
        scrubber = cls._cache.get(key)
        if scrubber is None:
            scrubber = cls(key)
            cls._cache[scrubber.secrets] = scrubber  # keyed by its own copies
        return scrubber

    @classmethod
    def current(cls, extra: Iterable[str] = ()) -> Scrubber:
        """The scrubber for this process's environment secrets, registered values and
        `extra`."""
        return cls.of([*environment_secrets(), *extra])

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        """`text` with every secret form replaced."""
        return self._pattern.sub(REDACTED, text) if self._pattern is not None else text

    def bytes(self, data: bytes) -> bytes:
        """`data` with every secret form (as UTF-8) replaced."""
        if self._bytes is None:
            return data
        return self._bytes.sub(REDACTED.encode(), data)

    def value(self, value: object) -> object:
        """Strings inside lists, tuples and dicts (keys too) scrubbed; other values as is."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        return value


def scrub(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` without secret values in any encoding (default: the environment's secrets)."""
    scrubber = Scrubber.current() if secrets is None else Scrubber.of(secrets)
    return scrubber.text(text)


def kept_secrets() -> tuple[list[str], list[object]]:
    """What this module keeps of secrets: the values (held copies and every scrubber's) and
    the other objects holding them (each scrubber's pattern sources and compiled patterns).
    For `_wipe`, in a fork that is about to run a snippet: no lock is taken."""
    values: list[str] = list(_held)
    holders: list[object] = []
    for scrubber in list(Scrubber._made):
        values += scrubber.secrets
        for pattern in (scrubber._pattern, scrubber._bytes):
            if pattern is not None:
                holders += [pattern.pattern, pattern]
    return values, holders


def drop_secrets() -> None:
    """Forget every secret this module keeps (after `_wipe` overwrote them, in a fork):
    nothing is registered any more, and every scrubber replaces nothing. (`re`'s cache
    keeps the overwritten patterns, which match nothing: purging it would free hundreds of
    patterns and touch as many pages of the fork.)"""
    _held.clear()
    Scrubber._cache.clear()
    for scrubber in list(Scrubber._made):
        scrubber.secrets = ()
        scrubber._pattern = scrubber._bytes = None
        scrubber.longest = 0
