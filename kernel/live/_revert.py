"""Undoing one application of new source exactly (see `Revert`)."""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass, field
from typing import Any

from liveforge.kernel.live._reach import discard_created
from liveforge.kernel.live._registered import unregister_overloads
from liveforge.kernel.live._undo import UndoLog

MISSING = object()  # a name that was not bound


@dataclass
class Revert:
    """How to undo one application exactly: the in-place mutations it made (newest first),
    the module bindings it changed (each put back only while it still holds what the
    change left there), and the forwardpy registrations it changed. Rolling back restores
    the objects that were there, identity included, instead of replaying old source; names
    the change never touched are never touched."""

    log: UndoLog
    namespace: dict[str, Any]
    bindings: dict[str, tuple[Any, Any]]
    registries: Any
    #: names bound to a new object while something else still held the old one: what held
    #: it, in words (the live check probes those, see `checks._probes`).
    held: dict[str, list[str]] = field(default_factory=dict)
    #: the functions the application made that took the place of no live one (an added
    #: `singledispatch` overload `_`, which its registry alone may hold).
    made: list[Any] = field(default_factory=list)
    #: names given back the function their unchanged definition made, which the removed
    #: statement that wrapped it held (not made by the application: registries keep it).
    given_back: frozenset[str] = frozenset()

    def rebound(self) -> dict[str, Any]:
        """Names the application bound to another object: name -> the object before."""
        return {n: b for n, (b, a) in self.bindings.items() if b is not MISSING}

    def __call__(self) -> list[str]:
        """Undo the application (once). Returns notes on what it could not take back: a
        function the application made that a framework's table keeps (see
        `discard_created`)."""
        self.registries()
        self.log.undo()
        dropped = []
        for name, (before, after) in self.bindings.items():
            if self.namespace.get(name, MISSING) is not after:
                continue  # rebound since by something else: not this change's to undo
            if before is MISSING:
                del self.namespace[name]
            else:
                self.namespace[name] = before
            if name not in self.given_back:
                dropped.append(after)
        self.bindings = {}
        # What ran when they were made (a decorator, `__init_subclass__`) stored them.
        kept = discard_created(dropped, self.namespace, anywhere=False)
        if self.made:
            unregister_overloads(self.made, self.namespace)
            self.made = []
        return kept


def changed_bindings(
    namespace: dict[str, Any], saved: dict[str, Any]
) -> dict[str, tuple[Any, Any]]:
    """Each name whose binding the application changed: (value before, value after)."""
    if len(namespace) == len(saved) and list(namespace) == list(saved):
        # The same names in the same order (the common case): the values compared in C.
        moved = itertools.compress(
            namespace, map(operator.is_not, namespace.values(), saved.values())
        )
        return {k: (saved[k], namespace[k]) for k in moved}
    changed = {
        k: (saved.get(k, MISSING), v)
        for k, v in namespace.items()
        if saved.get(k, MISSING) is not v
    }
    changed.update({k: (v, MISSING) for k, v in saved.items() if k not in namespace})
    return changed
