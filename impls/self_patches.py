"""Patches the agent makes to itself: queued, applied at the step boundary, undone on faults.

A `patch` call whose target is part of liveforge (not the kernel, which refuses patches) is
not run when the model asks: it is queued, and after the step's other tool calls the queue
is applied as one transaction, so the loop never runs half-changed code and a failing patch
leaves none of its batch behind. Applied self-patches are *on probation* until a turn ends
cleanly with them in place: the kernel's `SafetyNet` (`Agent.safety_net()`) reads them from
the runtime's history — self-changes that bypass the queue, say `rt.patch` inside
`execute`, included — and rolls them back if the agent machinery fails before that (see
`agent_loop` and the watchdog in `liveforge.declarations.agent`).

Persisting while a self-patch is unpersisted first runs liveforge's own test suite in the
sandbox with the overlay (`self_test_guard`, a persist guard on the runtime); a failure
refuses the persist.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from liveforge.declarations.messages import ToolUseBlock
from liveforge.declarations.toolbox import ToolResult
from liveforge.impls.session_changes import is_self_module
from liveforge.kernel.errors import LiveforgeError, UnverifiedChange

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = [
    "apply_batch",
    "default_self_tests",
    "is_self_patch",
    "self_test_guard",
]

_APPLIED_NOTE = (
    "\n(self-patch: in effect from your next request; rolled back automatically "
    "if it breaks the agent loop)"
)


class _BatchFailed(Exception):
    def __init__(self, call: ToolUseBlock, result: ToolResult) -> None:
        super().__init__(result.text)
        self.call, self.result = call, result


def is_self_patch(agent: Agent, call: ToolUseBlock) -> bool:
    """True for a `patch` call aimed at liveforge itself."""
    path = call.input.get("path")
    return (
        call.name == "patch"
        and isinstance(path, str)
        and is_self_module(path, agent.settings.self_packages)
    )


def apply_batch(
    agent: Agent, queued: list[ToolUseBlock]
) -> tuple[dict[str, ToolResult], list[str], bool]:
    """Apply queued self-patches all-or-nothing (runs in the tool worker thread).

    Returns each call's result, the ids of the changes now in effect, and success.
    """
    results: dict[str, ToolResult] = {}
    try:
        with agent.runtime.transaction() as changes:
            for call in queued:
                result = agent.toolbox.call("patch", call.input, agent.settings.tool_timeout)
                if result.is_error:
                    raise _BatchFailed(call, result)
                results[call.id] = ToolResult(result.text + _APPLIED_NOTE)
    except _BatchFailed as failed:
        path = failed.call.input.get("path")
        for call in queued:
            results[call.id] = ToolResult(
                f"not applied: the self-patch of {path} in the same step failed, and the "
                "self-patches of a step apply all or nothing. Fix it and patch again.",
                is_error=True,
            )
        results[failed.call.id] = ToolResult(
            failed.result.text + "\nNone of this step's self-patches was applied.",
            is_error=True,
            refused=failed.result.refused,
        )
        return results, [], False
    return results, [c.id for c in changes], True


def default_self_tests() -> list[str] | None:
    """pytest arguments for liveforge's own suite, when its sources ship their tests."""
    tests = Path(__file__).resolve().parent.parent / "tests"
    return [str(tests), "-q", "-p", "no:cacheprovider"] if tests.is_dir() else None


def self_test_guard(agent: Agent, modules: list[str]) -> None:
    """Persist guard: writing self-patches needs liveforge's own suite to pass first.

    Installed on the agent's runtime (`Runtime.add_persist_guard`), so it holds however the
    persist is reached — the persist tool, or `rt.persist()` inside `execute`.
    """
    targets = [m for m in modules if is_self_module(m, agent.settings.self_packages)]
    if not targets:
        return
    args = agent.settings.self_tests
    selection = list(args) if args is not None else default_self_tests()
    if selection is None:
        raise UnverifiedChange(
            "refused: persisting changes to liveforge itself needs "
            "liveforge's own test suite, which is not installed here; "
            "configure agent self_tests (pytest arguments)."
        )
    try:
        result = agent.runtime.run_tests(selection, timeout=agent.settings.self_test_timeout)
    except LiveforgeError as exc:
        raise UnverifiedChange(f"refused: liveforge's own tests could not run: {exc}") from exc
    if not result.ok:
        raise UnverifiedChange(
            "refused: liveforge's own test suite fails with your changes "
            f"to {', '.join(targets)}; nothing was written.\n"
            f"{result.summary()}"
        )
