"""Output discipline: every tool result is bounded, plain and deterministic.

A result longer than its limit is cut at a line boundary and ends with a marker that says
how much was left out and how to see the rest (for code: which ``start`` to ask for). Text is
plain: ANSI colour codes are removed and nothing depends on the terminal's width.

    >>> clip("".join(f"{i}\\n" for i in range(100)), limit=60, more=lambda n: f"start={n}")
    '0\\n1\\n2\\n[... 97 more lines (284 chars) not shown; start=4]'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "DEFAULT_LIMIT",
    "clip",
    "clip_middle",
    "limited_to",
    "number_lines",
    "output_limit",
    "plain",
]

DEFAULT_LIMIT = 8000
"""Characters a tool result may take before it is cut, unless the caller sets another."""

_limit: ContextVar[int] = ContextVar("liveforge_output_limit", default=DEFAULT_LIMIT)


def output_limit() -> int:
    """The limit of the current tool call (the toolbox's ``limit``), else DEFAULT_LIMIT."""
    return _limit.get()


@contextmanager
def limited_to(limit: int) -> Iterator[None]:
    """Bound tool results to ``limit`` characters for the duration of the block."""
    token = _limit.set(limit)
    try:
        yield
    finally:
        _limit.reset(token)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")


def plain(text: str) -> str:
    """``text`` without ANSI escape sequences and carriage-return redraws."""
    text = _ANSI.sub("", text)
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def clip(text: str, limit: int | None = None, more: Callable[[int], str] | None = None) -> str:
    """``text`` cut to at most ``limit`` characters at a line boundary, marker included.

    ``more`` receives the 1-based number of the first line left out and returns how to see
    the rest (e.g. ``"view_source('pkg.mod', start=181)"``); without it the marker says to
    narrow the request. ``limit`` defaults to ``output_limit()``.
    """
    limit = output_limit() if limit is None else limit
    if len(text) <= limit:
        return text
    lines = text.splitlines(keepends=True)
    hint = more or (lambda line: "narrow the request to see the rest")
    reserve = len(_marker(len(lines), len(text), hint(len(lines)))) + 1
    kept = len(_take(lines, max(limit - reserve, 0)))
    if kept == 0:  # the first line alone is too long: cut inside it
        cut = max(limit - reserve, 1)
        return f"{text[:cut]}\n[... {len(text) - cut} more chars not shown; {hint(1)}]"
    omitted = lines[kept:]
    body = "".join(lines[:kept])
    if not body.endswith("\n"):
        body += "\n"
    return body + _marker(len(omitted), sum(map(len, omitted)), hint(kept + 1))


def _marker(lines: int, chars: int, hint: str) -> str:
    return f"[... {lines} more lines ({chars} chars) not shown; {hint}]"


def clip_middle(text: str, limit: int | None = None, where: str = "") -> str:
    """``text`` cut to about ``limit`` characters keeping its head and its tail.

    For process output, where both the start and the end (tracebacks, summaries) matter.
    ``where`` names where the full text can be read; ``limit`` defaults to ``output_limit()``.
    """
    limit = output_limit() if limit is None else limit
    if len(text) <= limit:
        return text
    lines = text.splitlines(keepends=True)
    see = f"; full text: {where}" if where else ""
    budget = (
        max(limit - len(f"[... {len(lines)} lines ({len(text)} chars) omitted{see} ...]\n"), 2) // 2
    )
    head = _take(lines, budget)
    tail = _take(list(reversed(lines[len(head) :])), budget)[::-1]
    omitted = lines[len(head) : len(lines) - len(tail)]
    count = sum(len(line) for line in omitted)
    if not head and not tail:  # a few huge lines: cut by characters
        return (
            f"{text[:budget]}\n[... {len(text) - 2 * budget} chars omitted{see} ...]\n"
            f"{text[-budget:]}"
        )
    marker = f"[... {len(omitted)} lines ({count} chars) omitted{see} ...]\n"
    body = "".join(head)
    if body and not body.endswith("\n"):
        body += "\n"
    return body + marker + "".join(tail)


def _take(lines: list[str], budget: int) -> list[str]:
    taken: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) > budget:
            break
        taken.append(line)
        size += len(line)
    return taken


def number_lines(lines: list[str], first: int = 1) -> str:
    """``lines`` with right-aligned line numbers starting at ``first``, one per line."""
    width = len(str(first + len(lines) - 1))
    return "".join(f"{first + i:>{width}} {line}\n" for i, line in enumerate(lines))
