"""How a sandbox child reports what went wrong: an exception as type, message and a
traceback without the sandbox's own frames, and text clipped to a size a result can carry.

    outcome = {"status": "error", **exception_info(exc)}   # exc_type, exc_message, traceback
    outcome["value_repr"] = safe_repr(value)                # clipped; a broken repr is a result

Standard library only, with no sibling to load: sandbox children load this file by path
(see `_child`).
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

__all__ = ["MESSAGE_LIMIT", "REPR_LIMIT", "clip", "error_line", "exception_info", "safe_repr"]

REPR_LIMIT = 10_000
MESSAGE_LIMIT = 2_000
TRACEBACK_LIMIT = 50_000

_MACHINERY = frozenset(
    [
        *(
            str(Path(__file__).with_name(name))
            for name in ("_child.py", "_childpytest.py", "_overlayhook.py")
        ),
        str(Path(__file__).parent.parent / "boundary" / "_limits.py"),
    ]
)
"""The sandbox's files whose frames a check's traceback leaves out: running the check,
serving the overlay, counting process starts."""


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note of how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated {len(text) - limit} characters]"


def exception_info(exc: BaseException) -> dict[str, Any]:
    """Type, message and a traceback without the sandbox's and the import system's frames."""
    kind = type(exc)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else (f"{kind.__module__}.{kind.__qualname__}")
    )
    report = traceback.TracebackException(kind, exc, exc.__traceback__)
    pending: list[traceback.TracebackException | None] = [report]
    while pending:
        current = pending.pop()
        if current is None:
            continue
        current.stack = traceback.StackSummary.from_list(
            [frame for frame in current.stack if not _machinery(frame.filename)]
        )
        pending += [current.__cause__, current.__context__]
    return {
        "exc_type": name,
        "exc_message": clip(str(exc), MESSAGE_LIMIT),
        "traceback": clip("".join(report.format()), TRACEBACK_LIMIT),
    }


_FRAME = re.compile(r'File "([^"]*)", line (\d+), in [^\n]*\n[ \t]+(\S[^\n]*)')


def error_line(kind: str | None, message: str | None, trace: str | None) -> str:
    """One line for an exception: `Type: first line of its message`; an exception without
    a message (a bare `assert`) names the line that raised it instead."""
    kind = kind or "error"
    text = (message or "").strip().splitlines()
    if text:
        return f"{kind}: {text[0]}"
    frames = _FRAME.findall(trace or "")
    if not frames:
        return kind
    filename, line, code = frames[-1]
    where = "the snippet" if filename.startswith(("<verify:", "<live-check>")) else filename
    return f"{kind} at line {line} of {where}: {code.strip()}"


def _machinery(filename: str) -> bool:
    return filename in _MACHINERY or filename.startswith("<frozen importlib")


def safe_repr(value: object) -> str:
    """The clipped repr of `value`; a broken `__repr__` is described, not raised."""
    try:
        return clip(repr(value), REPR_LIMIT)
    except Exception as exc:  # a broken __repr__ must not lose the run's result
        return f"<repr failed: {type(exc).__name__}: {exc}>"
