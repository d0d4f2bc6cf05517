"""Running code against the live program: in this process, or sandboxed for checks.

``execute`` runs here (fast, sees everything, can break things); ``verify`` and
``run_tests`` run in a child process that carries every unpersisted change, with time and
memory limits, so a crash or a hang never takes the session down.
"""

from __future__ import annotations

from liveforge.declarations.permissions import effect
from liveforge.kernel.defaults import EXECUTE_TIMEOUT, TESTS_TIMEOUT, VERIFY_TIMEOUT
from liveforge.tools._context import runtime
from liveforge.tools._output import clip_middle, plain

__all__ = ["execute", "run_tests", "verify"]


@effect("execute")
def execute(code: str, timeout: float = EXECUTE_TIMEOUT) -> str:
    """Run Python code in the live process; shows output and the last expression's value.

    `rt` names the runtime. Use verify for code that might hang or crash.

    Args:
        code: statements; the value of a final expression is shown
        timeout: seconds before the code is interrupted
    """
    result = runtime().execute(code, timeout=timeout)
    return clip_middle(plain(result.summary()))


@effect("check")
def verify(code: str, timeout: float = VERIFY_TIMEOUT) -> str:
    """Run a check snippet in a sandboxed child carrying all unpersisted changes.

    A passing run marks the carried changes verified (persist needs that). Use assert.

    Args:
        code: statements; a failing assert or exception fails the check
        timeout: seconds before the child is killed
    """
    result = runtime().verify(code, timeout=timeout)
    return clip_middle(plain(result.summary()), where=result.record_path)


@effect("check")
def run_tests(args: list[str] | None = None, timeout: float = TESTS_TIMEOUT) -> str:
    """Run pytest in a sandboxed child carrying all unpersisted changes: counts, failures.

    Args:
        args: pytest arguments, e.g. ["tests/test_x.py", "-k", "name"]; omit for all
        timeout: seconds before the run is killed
    """
    result = runtime().run_tests(args, timeout=timeout)
    if result.tests is not None and result.status in ("passed", "failed"):
        # counts and failures say it all; pytest's own output stays in the record
        result = result.model_copy(update={"stdout": "", "stderr": ""})
    return clip_middle(plain(result.summary()), where=result.record_path)
