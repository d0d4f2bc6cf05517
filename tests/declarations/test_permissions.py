"""The permission table, rules and tool effects (DESIGN §1.9)."""

from __future__ import annotations

import pytest

from liveforge.declarations.permissions import (
    MODES,
    Decision,
    Policy,
    Rules,
    effect,
    effect_of,
)

EFFECTS = ("read", "memory", "check", "write", "execute", "shell", "unbounded")
TABLE = {
    "read-only": "allow deny  allow deny  deny  deny  deny",
    "ask": "allow ask   allow ask   ask   ask   ask",
    "auto-edit": "allow allow allow ask   ask   ask   ask",
    "full-auto": "allow allow allow allow allow allow ask",
}


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_decides_each_effect_as_documented(mode):
    """The table in the module docstring is what decide() answers."""
    expected = TABLE[mode].split()
    got = [Policy(mode=mode).decide("some_tool", e).value for e in EFFECTS]
    assert got == expected


def test_rules_override_the_mode_deny_first():
    """deny beats allow beats ask, whatever the mode says."""
    rules = Rules(allow=("persist", "execute"), ask=("verify",), deny=("execute",))
    policy = Policy(mode="read-only", rules=rules)
    assert policy.decide("persist", "write") is Decision.ALLOW
    assert policy.decide("execute", "execute") is Decision.DENY
    assert policy.decide("verify", "check") is Decision.ASK


def test_unbounded_calls_go_by_the_unbounded_rule_not_the_tools_allow():
    """A tool's allow does not let its calls outside the check boundary run unasked; the
    "unbounded" rule does, in any mode; a deny of the tool or of "unbounded" refuses them."""
    tool_allowed = Policy(mode="full-auto", rules=Rules(allow=("exec",)))
    assert tool_allowed.decide("exec", "shell") is Decision.ALLOW
    assert tool_allowed.decide("exec", "unbounded") is Decision.ASK
    allowed = Rules(allow=("unbounded",))
    assert Policy(mode="ask", rules=allowed).decide("exec", "unbounded") is Decision.ALLOW
    assert Policy(mode="ask", rules=allowed).decide("exec", "shell") is Decision.ASK
    assert Policy(mode="read-only", rules=allowed).decide("process", "unbounded") is Decision.ALLOW
    both = Rules(allow=("unbounded",), deny=("exec",))
    assert Policy(mode="full-auto", rules=both).decide("exec", "unbounded") is Decision.DENY
    denied = Rules(allow=("exec",), deny=("unbounded",))
    assert Policy(mode="full-auto", rules=denied).decide("exec", "unbounded") is Decision.DENY
    assert Policy(mode="full-auto", rules=denied).decide("exec", "shell") is Decision.ALLOW


def test_unknown_mode_is_refused_with_the_choices():
    """A misspelt mode names the valid ones."""
    with pytest.raises(ValueError, match="read-only, ask, auto-edit, full-auto"):
        Policy(mode="yolo")  # type: ignore[arg-type]


def test_an_unmarked_tool_counts_as_execute():
    """A tool that never said what it does is asked about in ask mode."""

    def tool() -> str:
        return ""

    assert effect_of(tool) == "execute"
    assert effect_of(effect("read")(tool)) == "read"
    with pytest.raises(ValueError):
        effect("delete")  # type: ignore[arg-type]


def test_a_call_can_have_a_lighter_effect_than_its_tool():
    """`lighter` lowers the effect of the calls it names; the tool's own effect (and any
    other call's) stays the strict one, and a bad effect name is refused when marking."""

    def tool(action: str = "start") -> str:
        return action

    marked = effect("shell", lighter={"action": {"poll": "read"}})(tool)
    assert effect_of(marked) == "shell"
    assert effect_of(marked, {"action": "poll"}) == "read"
    assert effect_of(marked, {"action": "start"}) == "shell"
    assert effect_of(marked, {"action": ["poll"]}) == "shell"
    with pytest.raises(ValueError, match="unknown tool effect 'peek'"):
        effect("shell", lighter={"action": {"poll": "peek"}})  # type: ignore[dict-item]


def test_a_call_can_have_a_stricter_effect_than_its_tool_unless_a_lighter_one_names_it():
    """`stricter` raises the effect of the calls it names (by a bool argument too); a call
    that `lighter` names keeps its milder effect."""

    def tool(action: str = "start", boundary: bool = True) -> str:
        return action

    marked = effect(
        "shell",
        lighter={"action": {"poll": "read"}},
        stricter={"boundary": {False: "unbounded"}},
    )(tool)
    assert effect_of(marked) == "shell"
    assert effect_of(marked, {"action": "start", "boundary": True}) == "shell"
    assert effect_of(marked, {"action": "start", "boundary": False}) == "unbounded"
    assert effect_of(marked, {"action": "poll", "boundary": False}) == "read"
    assert effect_of(marked, {"boundary": 0}) == "shell"
    with pytest.raises(ValueError, match="unknown tool effect 'wild'"):
        effect("shell", stricter={"boundary": {False: "wild"}})  # type: ignore[dict-item]


def test_rules_take_patterns_for_a_whole_mcp_server():
    """`mcp__NAME__*` in a rule names every tool of that server, and no other tool."""
    policy = Policy(mode="ask", rules=Rules(allow=("mcp__shop__*",), deny=("mcp__bank__*",)))
    assert policy.decide("mcp__shop__record", "write") is Decision.ALLOW
    assert policy.decide("mcp__bank__lookup", "read") is Decision.DENY
    assert policy.decide("mcp__shopping__record", "write") is Decision.ASK
    assert policy.decide("persist", "write") is Decision.ASK
