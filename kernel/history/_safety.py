"""The self-patch safety net: changes to a running agent's own code, on probation.

A program that patches itself (an agent improving its own loop) can break the very code
that would undo the damage. The net therefore lives in the kernel, which refuses patches,
and needs nothing from the code it watches:

- `begin()` marks where a watched period starts (say, a turn of the agent);
- every later change of the runtime to a watched module is *on probation*: the net reads
  them from the runtime's own history, so no replaceable code has to report them;
- `confirm()` ends the probation of the changes that were in place when the period began
  (a change made during a period may not have run yet: it waits for the next one);
- `rescue(fault)` rolls back every change on probation, newest first, and says which and
  why; `rescue(fault, everything=True)` also the confirmed ones, for when the machinery
  still fails after that.

`protected_file(module, paths)` answers the other half of keeping the net whole: whether a
module's *file* lies in a protected place, whatever name it was imported under.

Example::

    net = SafetyNet(rt, ("myagent.",))
    net.begin()
    try:
        run_the_agent()
        net.confirm()
    except Exception as fault:
        rescue = net.rescue(fault)          # None: nothing on probation explains it
        if rescue is None:
            raise
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from liveforge.kernel.errors import LiveforgeError
from liveforge.kernel.history._changes import Change, ChangeStatus

__all__ = ["KERNEL_DIR", "Rescue", "SafetyNet", "fault_summary", "protected_file", "watched"]

KERNEL_DIR = Path(__file__).resolve().parent.parent
"""The kernel's folder: its modules refuse patches whatever name they are imported under."""
_KERNEL = "liveforge.kernel"


class Runtime(Protocol):
    """What the net needs of a `liveforge.Runtime`."""

    def history(self) -> list[Change]: ...

    def rollback(self, change_id: str | None = None) -> list[Change]: ...


@dataclass(frozen=True)
class Rescue:
    """What `SafetyNet.rescue` undid: the change ids (newest first), the fault, and the
    notes the rollbacks gave the undone changes (what they could not take back)."""

    change_ids: tuple[str, ...]
    reason: str
    notes: tuple[str, ...] = ()


class SafetyNet:
    """Watches a runtime for changes to watched modules and undoes them on a fault.

    `prefixes` name the watched modules ("pkg." watches pkg and everything under it); the
    kernel is never watched (it cannot be patched without an explicit opt-in).
    """

    def __init__(self, runtime: Runtime, prefixes: Iterable[str]) -> None:
        self.runtime = runtime
        self.prefixes = tuple(prefixes)
        self.probation: list[str] = []
        """Ids of watched changes not yet confirmed, oldest first."""
        self.confirmed: list[str] = []
        """Ids of watched changes a whole period ran with, oldest first."""
        self._seen: set[str] = {c.id for c in runtime.history()}
        self._began_with: set[str] = set()

    def begin(self) -> None:
        """Start a watched period: changes made before now, outside a period, are not the
        watched program's doing; those on probation now are on trial in this period."""
        self._seen.update(c.id for c in self.runtime.history())
        self._began_with = set(self.probation)

    def hold(self, change_ids: Iterable[str]) -> None:
        """Put changes on probation explicitly (say, self-patches re-applied on resume)."""
        self._seen.update(change_ids)
        self.probation += [i for i in change_ids if i not in self.probation]

    def scan(self) -> list[str]:
        """Put the watched changes made since the last look on probation; returns their ids."""
        new = []
        for change in self.runtime.history():
            if change.id in self._seen:
                continue
            self._seen.add(change.id)
            if (
                change.kind != "reload"
                and change.status is not ChangeStatus.ROLLED_BACK
                and watched(change.module, self.prefixes)
            ):
                new.append(change.id)
        self.probation += new
        return new

    def due(self) -> list[str]:
        """The changes `confirm` would confirm now: those on probation the period began with."""
        self.scan()
        return [i for i in self.probation if i in self._began_with]

    def confirm(self) -> list[str]:
        """The watched period ended cleanly: the changes it began with leave probation.
        Returns their ids."""
        done = self.due()
        self.probation = [i for i in self.probation if i not in self._began_with]
        self.confirmed += done
        self._began_with = set()
        return done

    def rescue(self, fault: BaseException, *, everything: bool = False) -> Rescue | None:
        """Roll back every change on probation (with `everything`, the confirmed ones too),
        newest first; None when there is none."""
        self.scan()
        suspects = set(self.probation) | (set(self.confirmed) if everything else set())
        self.probation = []
        if everything:
            self.confirmed = []
        history = self.runtime.history()
        ids = [c.id for c in history if c.id in suspects]
        live = {c.id for c in history if c.status is not ChangeStatus.ROLLED_BACK}
        undone: list[str] = []
        notes: list[str] = []
        for change_id in reversed(ids):
            if change_id in live and change_id not in undone:
                try:
                    changes = self.runtime.rollback(change_id)
                except LiveforgeError:
                    continue  # cannot be undone (say, a later persist): the rest still can
                undone += [c.id for c in changes]
                notes += [n for c in changes for n in c.rollback_notes]
        if not undone:
            return None
        self._seen.update(undone)
        return Rescue(tuple(undone), fault_summary(fault), tuple(notes))


def watched(module: str, prefixes: Iterable[str]) -> bool:
    """True for a module named by one of `prefixes` ("pkg." is pkg and all under it), and
    never for the kernel."""
    if module == _KERNEL or module.startswith(_KERNEL + "."):
        return False
    return any(module == p.rstrip(".") or module.startswith(p) for p in prefixes)


def fault_summary(fault: BaseException) -> str:
    """One line naming the fault and the innermost frame of liveforge (or of patched code)
    it came from."""
    frames = [
        f
        for f in traceback.extract_tb(fault.__traceback__)
        if "liveforge" in f.filename or "/impls/" in f.filename or f.filename.startswith("<")
    ]
    where = f" at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    return f"{type(fault).__name__}: {fault}{where}"


def protected_file(module: str, paths: Iterable[Path]) -> bool:
    """True when the loaded module `module` comes from a file inside one of `paths`."""
    filename = getattr(sys.modules.get(module), "__file__", None)
    if not filename:
        return False
    try:
        resolved = Path(filename).resolve()
    except OSError:
        return False
    return any(resolved == p or resolved.is_relative_to(p) for p in paths)
