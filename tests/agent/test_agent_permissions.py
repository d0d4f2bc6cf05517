"""An agent built with the API follows its permission policy and asks its approver."""

from __future__ import annotations

from agent_support import make_agent, of_type, run_turn

from liveforge.agent_setup import build_agent
from liveforge.declarations.permissions import ApprovalRequest, Policy, Rules
from liveforge.declarations.provider import Provider
from liveforge.testing import reply

FIXED = "def area(radius: float) -> float:\n    return 3.14159 * radius * radius\n"


def _results(fake, index: int) -> list[dict]:
    return fake.requests[index].body["messages"][-1]["content"]


def test_ask_mode_calls_the_approver_with_a_preview_and_honours_its_answers(project, fake):
    """A patch asks the approver (the preview is its diff); yes applies it, no refuses
    the execute after it with a message for the model; reads never ask."""
    root, pkg = project
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.tool == "patch"

    fake.add(
        reply.tool_call("view_source", {"path": f"{pkg}.geometry.area"})
        .tool_call("patch", {"path": f"{pkg}.geometry.area", "source": FIXED})
        .tool_call("execute", {"code": "print('hi')"}),
        reply.text("done"),
    )
    route = fake.route("anthropic", keys=["sk-test-secret-key-0123456789"])
    agent = build_agent(
        root, provider=Provider([route]), env={}, policy=Policy(mode="ask"), approver=approver
    )
    events = run_turn(agent, "fix area")
    assert [r.tool for r in asked] == ["patch", "execute"]
    assert "-    return 3 * radius * radius" in asked[0].preview
    assert "+    return 3.14159 * radius * radius" in asked[0].preview
    assert asked[1].effect == "execute" and "print('hi')" in asked[1].preview
    viewed, patched, executed = _results(fake, 1)
    assert not viewed["is_error"] and not patched["is_error"]
    assert executed["is_error"] and "the user declined execute" in str(executed["content"])
    assert [e.target for e in of_type(events, "patch_applied")] == [f"{pkg}.geometry.area"]


def test_deny_rule_wins_over_full_auto_and_config_sets_the_default(project, fake):
    """A deny rule refuses the tool even in full-auto; the project's
    [tool.liveforge.permissions] is the default policy of build_agent, and the system
    prompt tells the model the mode and which tools it may not use."""
    root, pkg = project
    fake.add(
        reply.tool_call("patch", {"path": f"{pkg}.geometry.area", "source": FIXED}),
        reply.text("no"),
    )
    agent = make_agent(root, fake, policy=Policy(mode="full-auto", rules=Rules(deny=("patch",))))
    run_turn(agent, "fix area")
    (refused,) = _results(fake, 1)
    assert refused["is_error"] and "refused by a deny rule" in str(refused["content"])
    (root / "liveforge.toml").write_text('[permissions]\nmode = "read-only"\n')
    route = fake.route("anthropic", keys=["sk-test-secret-key-0123456789"])
    configured = build_agent(root, provider=Provider([route]), env={})
    assert configured.toolbox.policy.mode == "read-only"
    prompt = configured.prompt.render()
    assert "Permission mode: read-only." in prompt
    patch_line = next(line for line in prompt.splitlines() if line.startswith("- patch:"))
    view_line = next(line for line in prompt.splitlines() if line.startswith("- view_source:"))
    assert patch_line.endswith("[refused in this permission mode]") and "[" not in view_line
