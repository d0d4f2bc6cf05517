"""Running code against the live program: in this process, or sandboxed for checks.

``execute`` runs here (fast, sees everything, can break things); ``verify`` and
``run_tests`` run in a child process that carries every unpersisted change, with time and
memory limits, so a crash or a hang never takes the session down.
"""

from __future__ import annotations

from liveforge.tools._context import runtime
from liveforge.tools._output import DEFAULT_LIMIT, clip_middle, plain

__all__ = ["execute"]


def execute(code: str, timeout: float = 5.0) -> str:
    """Run Python code in the live process; shows output and the last expression's value.

    `rt` names the runtime. Use verify for code that might hang or crash.

    Args:
        code: statements; the value of a final expression is shown
        timeout: seconds before the code is interrupted
    """
    result = runtime().execute(code, timeout=timeout)
    return clip_middle(plain(result.summary()), DEFAULT_LIMIT)
