"""Old objects a change replaced and something still holds, probed by the live check.

When a change cannot update a definition in place — a decorator now makes another kind of
object, with no function inside the old one to update or forward through — the name takes
the new object and whatever held the old one (a reference taken before, a callback list)
keeps running the old code. A verify snippet takes its references afresh (`from m import
f`), so both of its runs, the fresh import and the live fork, see only the new object and
agree: the stale references are invisible to it.

So the live check probes them. The engine names what still held each replaced object when
the change was made (`Revert.held`); the fork runs the snippet once as usual, then once more
with each such name bound to the old object it replaced, as those references see it. When
the two runs end differently, the live run is reported failed, naming the name, what holds
the old object and how the runs differed — which the verify reports as a divergence between
the live process and a fresh import.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Probe", "compare"]


@dataclass
class Probe:
    """One name a change bound to a new object while something still held the old one."""

    module: str
    name: str
    old: Any
    #: what held the old object when the change was made, in words.
    where: list[str]


def compare(
    probes: list[Probe], first: dict[str, Any], run: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """In the live fork, after the snippet's run ended with `first`: bind each probed name
    to its old object and `run` the snippet again. The first outcome, unless the second
    ended differently: then a failed outcome that says where and how."""
    if not probes:
        return first
    for probe in probes:
        module = sys.modules.get(probe.module)
        if module is not None:
            setattr(module, probe.name, probe.old)
    second = run()
    if _same(first, second):
        return first
    names = "; ".join(
        f"{p.module}.{p.name} (the old object is held by {', '.join(p.where)})" for p in probes
    )
    message = (
        f"references to the objects a change replaced still run old code: with {names} "
        f"seen as those references see it, the snippet {_ended(second)}, where with the new "
        f"objects it {_ended(first)}. Make those references anew from the new definitions, "
        "or keep the decorator as it was"
    )
    return {"status": "failed", "exc_type": "StaleReferences", "exc_message": message}


def _same(first: dict[str, Any], second: dict[str, Any]) -> bool:
    keys = ("status", "value_repr", "exc_type")
    return all(first.get(k) == second.get(k) for k in keys)


def _ended(outcome: dict[str, Any]) -> str:
    if outcome.get("status") == "passed":
        value = outcome.get("value_repr")
        return "passed" + (f" with {value}" if value is not None else "")
    return f"{outcome.get('status')} ({outcome.get('exc_type')}: {outcome.get('exc_message')})"
