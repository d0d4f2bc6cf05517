"""The command line's exit codes and its usage error, light enough for every command to
import before it knows what it needs (`liveforge.errors` re-exports both)."""

from __future__ import annotations

from enum import IntEnum

from liveforge.kernel.errors import LiveforgeError

__all__ = ["CommandError", "ExitCode"]


class ExitCode(IntEnum):
    """Process exit codes of the `liveforge` command (documented in docs/commands.md)."""

    OK = 0
    CHECK_FAILED = 1
    USAGE = 2
    FAILED = 3
    REFUSED = 4
    """`run`: a tool call was refused (it needed approval nobody gave, or the mode, a deny
    rule or a plugin forbids it), so something the task asked for may not have been done."""
    INTERRUPTED = 130


class CommandError(LiveforgeError):
    """A command cannot proceed; `exit_code` says why (usage by default)."""

    def __init__(self, message: str, *, exit_code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code
