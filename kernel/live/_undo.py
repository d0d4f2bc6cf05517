"""The reversible record of in-place mutations a patch makes."""

from __future__ import annotations

from collections.abc import Callable


class UndoLog:
    """Reversible record of in-place mutations, undone newest first."""

    def __init__(self) -> None:
        self._steps: list[Callable[[], object]] = []

    def add(self, step: Callable[[], object]) -> None:
        """Remember how to undo one mutation."""
        self._steps.append(step)

    def steps(self) -> list[Callable[[], object]]:
        """The recorded steps, oldest first (what they hold is liveforge's own record)."""
        return list(self._steps)

    def undo(self) -> None:
        """Undo every recorded mutation, newest first."""
        while self._steps:
            self._steps.pop()()
