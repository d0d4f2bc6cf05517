"""Which live object each object a patch built was merged into, by identity.

A patch executes changed statements, which build new objects (classes, functions, enum
members), and merges each into the live object it stands for. While merging, what the new
objects refer to (a closure's cell, a `__wrapped__`, a base class, a member added to a class)
is looked up here, so that live objects end up referring to live objects. Only identity
tells objects apart, and an id is unique only among objects alive at the same time, so the
map holds every object it is keyed by until the patch is done. Otherwise one that dies
halfway hands its id on to an object a later statement builds, which is then taken for it:
a nested class built again, which the live class replaced in the new outer class, is freed
with its methods whenever the collector runs, and a later statement's new function could be
merged as one of the live methods they stood for.
"""

from __future__ import annotations

from typing import Any


class IdentityMap:
    """New objects of one patch -> the live objects they were merged into."""

    def __init__(self) -> None:
        self._pairs: dict[int, tuple[Any, Any]] = {}

    def link(self, new: Any, live: Any) -> None:
        """Remember that `new` was merged into `live` (and keep `new` alive)."""
        self._pairs[id(new)] = (new, live)

    def live(self, value: Any) -> Any:
        """The live object `value` was merged into, or `value` itself."""
        pair = self._pairs.get(id(value))
        return pair[1] if pair is not None and pair[0] is value else value
