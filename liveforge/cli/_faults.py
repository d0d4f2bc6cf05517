"""Unexpected exceptions as one message: what happened, where in the project, what to do."""

from __future__ import annotations

from liveforge.kernel.source._importfail import project_frame

__all__ = ["describe_fault"]


def describe_fault(exc: BaseException, project: str) -> str:
    """Say what `exc` means to a person at the command line, without a traceback.

    Code of the project that raised (or called `sys.exit`) while liveforge imported it is
    named by file and line; anything else is a fault in liveforge, reported as such.
    """
    where = project_frame(exc, project)
    if isinstance(exc, SystemExit):
        what = f"the project's code called sys.exit({exc.code!r})"
        fix = 'guard it with `if __name__ == "__main__":` so importing the module does not exit'
    else:
        what = f"{type(exc).__name__}: {exc}"
        fix = "fix that code (liveforge imports modules to work on them)"
    if where is None:
        return (
            f"unexpected error inside liveforge: {what}. "
            "Run the command again with --debug for the traceback, and report it."
        )
    return f"{what} (at {where}); {fix}, or run again with --debug for the traceback."
