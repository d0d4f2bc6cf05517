"""The self-patch safety net holds even when the agent breaks its own recovery path: every
function the loop needs to end a turn, report a rollback or record it, patched to raise."""

from __future__ import annotations

import sys
import uuid

import pytest
from agent_support import dedent, make_agent, of_type, run_turn

from liveforge.declarations.session import Session
from liveforge.kernel import ProtectedTarget
from liveforge.testing import reply

TRIGGER = "liveforge.impls.agent_model.build_request"
"""A self-patch that fails the next model request: the fault that needs the recovery path."""

_SIGNATURES = {
    "liveforge.declarations.agent.Agent.turn": "async def turn(self, user_input, *, going_on=0):",
    "liveforge.declarations.agent.Agent.settle": "def settle(self, rescue):",
    "liveforge.impls.agent_loop._steps": "async def _steps(agent, turn):",
    "liveforge.impls.agent_loop._report_rescue": "def _report_rescue(agent, turn, rescue):",
    "liveforge.impls.agent_turn.ending": "def ending(agent, turn, outcome):",
    "liveforge.impls.agent_turn.close_open_calls": "def close_open_calls(agent, turn, note=''):",
    "liveforge.impls.agent_turn.add_note": "def add_note(agent, text):",
    "liveforge.declarations.session.Session.track": "def track(self, runtime, self_prefixes=()):",
    "liveforge.declarations.session.Session.confirm": "def confirm(self, change_ids):",
    "liveforge.impls.session_store.write_record": "def write_record(session, kind, **data):",
    "liveforge.declarations.prompt.SystemPrompt.render": "def render(self):",
    TRIGGER: "def build_request(agent, *, last_step=False):",
}


def broken(target: str) -> str:
    """Source for `target` that raises as soon as it runs."""
    head = _SIGNATURES[target]
    body = f"    raise RuntimeError('broken on purpose: {target}')\n"
    return head + "\n" + body + ("    yield\n" if head.startswith("async") else "")


def _live_targets(agent) -> set[str]:
    return {c.target for c in agent.runtime.history() if c.status.value != "rolled_back"}


@pytest.mark.parametrize("target", [t for t in _SIGNATURES if t != TRIGGER])
def test_a_broken_recovery_path_is_rolled_back_and_the_session_goes_on(project, fake, target):
    """The agent breaks `target`, then makes a fault: the turn of the rollback goes on and
    ends with an answer (the model asked again, told what was rolled back), the broken
    patch is never live in the transcript, and both the session and a resumed one answer."""
    root, _ = project
    fake.add(
        reply.tool_call("patch", {"path": target, "source": broken(target)}),
        reply.text("patched"),
        reply.tool_call("patch", {"path": TRIGGER, "source": broken(TRIGGER)}),
        *[reply.text(f"answer {n}") for n in range(8)],
    )
    agent = make_agent(root, fake)
    try:
        turns = [run_turn(agent, f"turn {n}") for n in range(4)]
        assert [t[-1].reason for t in turns] == ["answer"] * 4
        told = [e.type for e in turns[1]]  # the turn that made the fault: it goes on
        assert told.index("self_patches_rolled_back") < told.index("final_answer")
        applied = [e for t in turns for e in of_type(t, "self_patches_applied")]
        assert applied[0].ok, "the broken patch must have gone in for the test to mean much"
        first = applied[0].change_ids[0]
        rolled = [
            i for t in turns for e in of_type(t, "self_patches_rolled_back") for i in e.change_ids
        ]
        assert first in rolled
        assert "broken on purpose" not in agent.runtime.source(target)
        assert target not in _live_targets(agent) and TRIGGER not in _live_targets(agent)
        assert turns[-1][-1].reason == "answer"
        assert "rolled back automatically" in str(fake.requests[-1].body["messages"])
        resumed = make_agent(root, fake, resume=agent.session.id)
        assert not [c for c in resumed.session.unpersisted() if c.target in (target, TRIGGER)]
        assert run_turn(resumed, "still there?")[-1].reason == "answer"
        resumed.runtime.rollback_to(None)
    finally:
        agent.runtime.rollback_to(None)


def test_a_self_patch_on_probation_when_the_process_stops_is_not_reapplied(project, fake):
    """A self-patch that no turn began and ended with (the process died first, say) stays
    out of a resumed session; one confirmed by a whole turn comes back."""
    root, _ = project
    tool = f"liveforge.tools.made_{uuid.uuid4().hex[:8]}"
    kept = dedent('''
        def cut_text(text, limit, what="tool result"):
            """Patched, same behaviour for short text."""
            return text if len(text) <= limit else text[:limit] + " [cut]"
        ''')
    fake.add(
        reply.tool_call("patch", {"path": "liveforge.impls.compaction.cut_text", "source": kept}),
        reply.text("patched"),
        reply.text("fine"),
        reply.tool_call("patch", {"path": tool, "source": '"""ok"""\n', "module": True}),
        reply.text("patched again"),
    )
    agent = make_agent(root, fake)
    try:
        run_turn(agent, "patch your truncation")
        run_turn(agent, "how are you?")  # began with cut_text: confirmed
        run_turn(agent, "patch once more")  # build_request applied, still on probation
        assert len(agent.safety_net().probation) == 1
        records = Session.open(root, agent.session.id).changes
        confirmed = {c.target: c.confirmed for c in records if c.self_patch}
        assert confirmed == {"liveforge.impls.compaction.cut_text": True, tool: False}
    finally:
        agent.runtime.rollback_to(None)  # as if the process had stopped here
    resumed = make_agent(root, fake, resume=agent.session.id)
    try:
        lines = resumed.session.live.restored
        assert any("cut_text: re-applied" in line for line in lines), lines
        assert any(f"{tool}: not re-applied" in line for line in lines), lines
        assert "[cut]" in resumed.runtime.source("liveforge.impls.compaction.cut_text")
        assert tool not in sys.modules
    finally:
        resumed.runtime.rollback_to(None)


def test_the_watchdog_and_the_contracts_refuse_patches_in_an_agent_runtime(project, fake):
    """`liveforge.declarations` (where `Agent.run` watches the turn) is protected by file
    location, while an @impl body named through its declaration can still be patched."""
    root, _ = project
    agent = make_agent(root, fake)
    rt = agent.runtime
    with pytest.raises(ProtectedTarget, match="protected file"):
        rt.patch("liveforge.declarations.agent._recover", "def _recover(*a):\n    pass\n")
    with pytest.raises(ProtectedTarget):
        rt.patch_module("liveforge.declarations.agent", "")
    try:
        rt.patch(
            "liveforge.declarations.agent.Agent.system_prompt",
            "def system_prompt(self):\n    return 'x'\n",
        )
        assert agent.system_prompt() == "x"
    finally:
        rt.rollback_to(None)


def test_every_recovery_function_broken_in_one_step_is_rolled_back_together(project, fake):
    """One step patches the whole recovery path at once: the turn still ends, every patch is
    undone, and the next turn answers."""
    root, _ = project
    targets = [t for t in _SIGNATURES if t != TRIGGER]
    step = reply.tool_call("patch", {"path": targets[0], "source": broken(targets[0])})
    for target in targets[1:]:
        step = step.tool_call("patch", {"path": target, "source": broken(target)})
    fake.add(step, *[reply.text(f"answer {n}") for n in range(4)])
    agent = make_agent(root, fake)
    try:
        first = run_turn(agent, "break everything")
        assert of_type(first, "self_patches_applied")[0].ok
        rolled = of_type(first, "self_patches_rolled_back")
        assert len(rolled[0].change_ids) == len(targets)
        assert first[-1].reason == "answer" and of_type(first, "final_answer")[0].text == "answer 0"
        assert not _live_targets(agent)
        assert run_turn(agent, "and now?")[-1].reason == "answer"
    finally:
        agent.runtime.rollback_to(None)
