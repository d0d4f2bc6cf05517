"""What the chat says about the state of the changes: check results in one line, what is
not yet verified (or divergent) before a persist, and what only memory holds at exit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from liveforge.kernel import Change
    from liveforge.kernel.checks._records import RunResult

__all__ = ["check_line", "memory_only", "not_ready", "reasons"]

_MAX_FAILURES = 3


def check_line(result: RunResult) -> str:
    """One line for a sandbox run: outcome and time, then the value or the failing tests."""
    mark = "✓" if result.ok else "✗"
    what = "verify" if result.kind == "snippet" else "tests"
    parts = [f"{mark} {what} {result.status} in {result.duration:.2f}s"]
    if result.tests is not None:
        t = result.tests
        counts = f"{t.passed} passed, {t.failed} failed" + (
            f", {t.errors} error" + ("s" if t.errors != 1 else "") if t.errors else ""
        )
        parts.append(counts)
        names = [f.nodeid for f in result.failures[:_MAX_FAILURES]]
        if names:
            more = len(result.failures) - len(names)
            parts.append("failing: " + ", ".join(names) + (f" (+{more} more)" if more > 0 else ""))
    elif result.ok and result.value_repr is not None:
        parts.append(f"value {_short(result.value_repr)}")
    elif not result.ok:
        parts.append(_short(result.message))
    parts.append(f"run {result.run_id}")
    return " · ".join(parts)


def _short(text: str, limit: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def not_ready(rt: Any) -> list[Change]:
    """Unpersisted changes that persist would refuse: divergent (the live process and a
    fresh import disagreed, even after an earlier check passed), or not verified since their
    last edit."""
    from liveforge.kernel import ChangeStatus

    return [
        c
        for c in rt.history()
        if c.status in (ChangeStatus.APPLIED, ChangeStatus.VERIFIED)
        and (c.divergent or (not c.verified and c.kind != "reload"))
    ]


def reasons(changes: list[Change]) -> list[str]:
    """Why each change is not ready, one line each."""
    lines = []
    for change in changes:
        why = (
            f"divergent: the live process and a fresh import disagreed (run {change.divergent_in})"
            if change.divergent
            else "not verified since its last edit"
        )
        lines.append(f"{change.id} {change.target}: {why}")
    return lines


def memory_only(rt: Any) -> list[str]:
    """Modules whose in-memory source differs from their files (lost at exit unless
    persisted; `--resume` brings them back)."""
    return [record.name for record in rt.changed_modules()]
