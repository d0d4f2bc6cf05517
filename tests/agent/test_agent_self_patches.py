"""Patches the agent makes to liveforge itself: queued to the step boundary, all or nothing,
rolled back automatically when they break the loop."""

from __future__ import annotations

import uuid

import pytest
from agent_support import dedent, make_agent, of_type, run_turn

from liveforge.testing import reply

BROKEN_BUILD_REQUEST = dedent("""
    def build_request(agent, *, last_step=False):
        raise RuntimeError("broken on purpose by a self-patch")
    """)


@pytest.fixture
def tool_module():
    """A fresh name for an agent-made tool module under liveforge.tools."""
    return f"liveforge.tools.made_{uuid.uuid4().hex[:8]}"


def _undo_all(agent) -> None:
    agent.runtime.rollback_to(None)


def test_new_tool_written_by_the_model_is_used_in_the_same_session(project, fake, tool_module):
    """A tool module created with patch(module=True) is queued, applied at the step
    boundary, offered in the next request and callable there."""
    root, _ = project
    source = dedent('''
        """A tool the agent wrote."""

        __all__ = ["shout"]


        def shout(text: str) -> str:
            """Upper-case text.

            Args:
                text: what to shout
            """
            return text.upper() + "!"
        ''')
    fake.add(
        reply.tool_call("patch", {"path": tool_module, "source": source, "module": True}),
        reply.tool_call("shout", {"text": "it works"}),
        reply.text("The new tool works."),
    )
    agent = make_agent(root, fake)
    try:
        events = run_turn(agent, "write a shout tool and use it")
        first = of_type(events, "tool_finished")[0]
        assert first.deferred and first.name == "patch"
        applied = of_type(events, "self_patches_applied")[0]
        assert applied.ok and len(applied.change_ids) == 1
        assert of_type(events, "patch_applied")[0].self_patch
        names = [t["name"] for t in fake.requests[1].body["tools"]]
        assert "shout" in names and "shout" not in [
            t["name"] for t in fake.requests[0].body["tools"]
        ]
        results = [
            b
            for b in fake.requests[2].body["messages"][-1]["content"]
            if b.get("type") == "tool_result"
        ]
        assert results[0]["content"] == "IT WORKS!" and not results[0]["is_error"]
        assert "self-patch" in str(fake.requests[1].body["messages"][-1]["content"])
    finally:
        _undo_all(agent)


def test_self_patch_batch_is_all_or_nothing(project, fake, tool_module):
    """When one self-patch of a step fails, the others of that step are not applied."""
    root, _ = project
    good = {"path": tool_module, "source": '"""ok"""\n__all__ = []\n', "module": True}
    bad = {"path": "liveforge.impls.compaction.cut_text", "source": "def cut_text(:\n"}
    fake.add(reply.tool_call("patch", good).tool_call("patch", bad), reply.text("hm"))
    agent = make_agent(root, fake)
    try:
        events = run_turn(agent, "two self-patches")
        applied = of_type(events, "self_patches_applied")[0]
        assert not applied.ok and applied.change_ids == []
        results = [
            b
            for b in fake.requests[1].body["messages"][-1]["content"]
            if b.get("type") == "tool_result"
        ]
        assert all(r["is_error"] for r in results)
        assert "all or nothing" in results[0]["content"]
        assert tool_module not in __import__("sys").modules
        assert not [c for c in agent.runtime.history() if c.status.value != "rolled_back"]
    finally:
        _undo_all(agent)


def test_self_patch_that_breaks_the_loop_is_rolled_back_and_the_session_continues(project, fake):
    """A self-patch that makes the next request fail is undone, recorded in the transcript,
    the model is told, and the turn goes on to an answer."""
    root, _ = project
    target = "liveforge.impls.agent_model.build_request"
    fake.add(
        reply.tool_call("patch", {"path": target, "source": BROKEN_BUILD_REQUEST}),
        reply.text("Understood, my patch was rolled back."),
    )
    agent = make_agent(root, fake)
    try:
        events = run_turn(agent, "patch your request builder")
        rolled = of_type(events, "self_patches_rolled_back")[0]
        assert "broken on purpose" in rolled.reason and rolled.change_ids
        assert events[-1].reason == "answer"
        assert "broken on purpose" not in agent.runtime.source(target)
        told = str(fake.requests[-1].body["messages"][-1]["content"])
        assert "were rolled back automatically" in told
        transcript = agent.session.path.read_text()
        assert '"what": "self_patch_rollback"' in transcript
        assert agent.safety_net().probation == []
        fake.add(reply.text("still here"))
        assert run_turn(agent, "are you ok?")[-1].reason == "answer"
    finally:
        _undo_all(agent)


def test_a_loop_fault_without_self_patches_propagates(project, fake):
    """A fault in liveforge's machinery that no agent self-patch explains is raised, and the
    session stays valid for the next turn."""
    root, _ = project
    fake.add(reply.text("never sent"))
    agent = make_agent(root, fake)
    target = "liveforge.impls.agent_model.build_request"
    agent.runtime.patch(target, BROKEN_BUILD_REQUEST)
    try:
        with pytest.raises(RuntimeError, match="broken on purpose"):
            run_turn(agent, "hello")
    finally:
        agent.runtime.rollback_to(None)
    events = run_turn(agent, "hello again")
    assert events[-1].reason == "answer"


def test_the_kernel_stays_protected_from_the_agent(project, fake):
    """A patch of liveforge.kernel is refused (not queued) and comes back as a tool error."""
    root, _ = project
    fake.add(
        reply.tool_call(
            "patch",
            {
                "path": "liveforge.kernel.errors.LiveforgeError",
                "source": "class LiveforgeError(Exception):\n    pass\n",
            },
        ),
        reply.text("cannot"),
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "patch the kernel")
    finished = of_type(events, "tool_finished")[0]
    assert finished.is_error and not finished.deferred
    assert "ProtectedTarget" in finished.summary


def test_resumed_self_patches_are_on_probation_again(project, fake):
    """A self-patch re-applied on resume has not run the loop in the new process yet, so
    it counts as unconfirmed (a loop fault would roll it back)."""
    root, _ = project
    kept = dedent('''
        def cut_text(text, limit, what="tool result"):
            """Patched, same behaviour for short text."""
            return text if len(text) <= limit else text[:limit] + " [cut]"
        ''')
    fake.add(
        reply.tool_call("patch", {"path": "liveforge.impls.compaction.cut_text", "source": kept}),
        reply.text("done"),
        reply.text("fine"),
    )
    first = make_agent(root, fake)
    run_turn(first, "patch your truncation")
    assert len(first.safety_net().probation) == 1  # it has not run a whole turn yet
    run_turn(first, "how are you?")
    assert first.safety_net().probation == [] and len(first.safety_net().confirmed) == 1
    first.runtime.rollback_to(None)
    resumed = make_agent(root, fake, resume=first.session.id)
    try:
        assert "re-applied" in resumed.session.live.restored[0]
        live = [c.id for c in resumed.runtime.history() if c.status.value == "applied"]
        assert resumed.safety_net().probation == live and len(live) == 1
        assert "[cut]" in resumed.runtime.source("liveforge.impls.compaction.cut_text")
    finally:
        _undo_all(resumed)


def test_a_self_patch_made_through_execute_is_also_rolled_back_when_it_breaks_the_loop(
    project, fake
):
    """Self-changes that bypass the queue (rt.patch inside execute) take effect at once but
    are on probation too: the loop fault that follows undoes them."""
    root, _ = project
    code = f"rt.patch('liveforge.impls.agent_model.build_request', {BROKEN_BUILD_REQUEST!r})"
    fake.add(reply.tool_call("execute", {"code": code}), reply.text("rolled back, fine"))
    agent = make_agent(root, fake)
    try:
        events = run_turn(agent, "patch yourself through execute")
        assert of_type(events, "patch_applied")[0].self_patch
        assert of_type(events, "self_patches_rolled_back")[0].change_ids
        assert events[-1].reason == "answer"
    finally:
        _undo_all(agent)
