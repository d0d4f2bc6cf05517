"""A finished sandbox run as a `RunResult`: status, a one-line message, the boundary.

The child's JSON outcome and the parent's view of how it ended (`RunExit`) are combined; the
boundary the child reported (or, when it died first, the one it was given) is recorded with
the limits the run hit; every string is scrubbed of secret values before it is kept.
"""

from __future__ import annotations

import signal
from typing import Any

from liveforge.kernel.boundary._boundary import BoundaryPolicy
from liveforge.kernel.boundary._isolation import Boundary
from liveforge.kernel.boundary._overlay import Changes
from liveforge.kernel.boundary._policy import expected_report, limits_hit
from liveforge.kernel.boundary._secrets import Scrubber
from liveforge.kernel.checks._child import SELF_SIGNAL
from liveforge.kernel.checks._childerrors import error_line
from liveforge.kernel.checks._records import (
    RunResult,
    RunStatus,
    TestCounts,
    TestFailure,
)
from liveforge.kernel.checks._runner import RunExit

__all__ = ["build_result"]


def build_result(
    fields: dict[str, Any],
    ended: RunExit,
    *,
    policy: BoundaryPolicy,
    timeout: float,
    scrubber: Scrubber,
    changed: Changes | None = None,
) -> RunResult:
    """The result of a finished run. `fields` holds what the parent knows of the run (id,
    kind, times, code or args, changes, overlay, record path); `changed`, what the check
    wrote into its copy-on-write view of the project."""
    child = ended.outcome
    fields = {**fields, "stdout": ended.stdout, "stderr": ended.stderr}
    fields["exit_code"] = ended.exit_code
    if ended.exit_code is not None and ended.exit_code < 0:
        fields["signal"] = signal.Signals(-ended.exit_code).name
    for key in ("value_repr", "exc_type", "exc_message", "traceback"):
        fields[key] = child.get(key)
    if "tests" in child:
        fields["tests"] = TestCounts(**child["tests"])
        fields["failures"] = [TestFailure(**f) for f in child.get("failures", [])]
    report = child.get("boundary") or expected_report(policy)
    boundary = Boundary(**report)
    if changed:
        boundary = boundary.with_changes(changed.written, changed.deleted)
    if ended.left_running:
        boundary = boundary.with_killed(ended.left_running)
    boundary.hit = limits_hit(
        child,
        fields.get("signal"),
        timed_out=ended.timed_out,
        output_truncated=ended.truncated,
        policy=policy,
        own_signal=_own_signal(ended),
    )
    status, message = _classify(child, ended, policy, timeout, boundary.hit)
    if status in ("failed", "error") and child.get("exc_type") == "PermissionError":
        message += f" (the check's boundary denied it: {boundary.line()})"
    result = RunResult(
        status=status, ok=status == "passed", message=message, boundary=boundary, **fields
    )
    clean = scrubber.value(result.model_dump())
    return RunResult.model_validate(clean)


def _classify(
    child: dict[str, Any], ended: RunExit, policy: BoundaryPolicy, timeout: float, hit: list[str]
) -> tuple[RunStatus, str]:
    """The run's status and a one-line message saying what happened (`hit`: the limits
    it ran into)."""
    memory_mb = policy.memory_mb
    if ended.timed_out:
        return "timed_out", f"killed after the {timeout:g} s timeout (with its process group)"
    if ended.template_lost:
        return "crashed", "the sandbox template process died during the run"
    if child.get("harness_error"):
        return "error", f"the sandbox could not run the request: {child.get('exc_message')}"
    if "status" not in child and ended.stopped:
        return "crashed", "stopped before it reported a result (the front end stopped its checks)"
    if "status" not in child:
        code = ended.exit_code
        if code is not None and code < 0:
            return "crashed", _killed_by(signal.Signals(-code).name, ended, policy, hit)
        return "crashed", f"the child exited with code {code} before reporting a result"
    status: RunStatus = child["status"]
    if status == "killed_memory":
        return status, f"MemoryError under the {memory_mb} MiB memory limit"
    if "tests" in child:
        return status, _tests_message(child, ended)
    if status == "passed":
        return status, "the snippet ran to completion"
    return status, _error(child)


def _error(child: dict[str, Any]) -> str:
    return error_line(child.get("exc_type"), child.get("exc_message"), child.get("traceback"))


def _own_signal(ended: RunExit) -> bool:
    """True when the check noted that it sent the signal it died of to itself."""
    code = ended.exit_code
    if code is None or code >= 0:
        return False
    return f"{SELF_SIGNAL}{signal.Signals(-code).name} to itself" in ended.stderr


def _killed_by(name: str, ended: RunExit, policy: BoundaryPolicy, hit: list[str]) -> str:
    """What sent the signal that ended a check before it reported: the check itself (its
    own note), the CPU-time limit, or something outside liveforge's limits."""
    if _own_signal(ended):
        return f"killed by its own {name}: the check's code signalled its own process (group)"
    if "cpu" in hit:
        limit = f"{policy.cpu_seconds:g} s " if policy.cpu_seconds is not None else ""
        return f"killed by {name} at its {limit}CPU-time limit"
    return (
        f"killed by {name} before reporting a result; not by liveforge (no timeout, no "
        "limit reached): something the check started, another process, or the system (for "
        "example the out-of-memory killer) sent it"
    )


def _tests_message(child: dict[str, Any], ended: RunExit) -> str:
    tally = TestCounts(**child["tests"]).line()
    if child.get("exc_type"):
        return _error(child)
    if child.get("exc_message"):
        return str(child["exc_message"])
    if child["status"] == "error" and not child.get("failures"):
        return f"pytest stopped with exit code {child.get('pytest_exit_code')}: " + _first_line(
            ended.stderr or ended.stdout
        )
    return tally


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:200]
