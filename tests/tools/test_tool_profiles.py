"""Tool profiles: each profile's tool list is pinned; allow adds, deny removes (and wins);
a denied tool is absent from the model's specs and refused if called anyway; bad group
names are configuration errors naming the key."""

from __future__ import annotations

import pytest

import liveforge.impls  # noqa: F401  (the @impl bodies)
from liveforge.config import load_config
from liveforge.declarations.permissions import Policy
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.declarations.toolbox import Toolbox
from liveforge.kernel import ConfigError, Runtime

FULL_AUTO = Policy(mode="full-auto")  # these tests are about the tools, not the gate

CODE = ["complete", "find", "inspect_module", "references", "view_source"]
FILES = ["apply_patch", "edit_file", "read_file", "write_file"]
MEMORY = ["memory_forget", "memory_search", "memory_write"]
LIVE = ["diff", "execute", "history", "patch", "persist", "reload", "rollback", "run_tests"]
AGENTS = ["agent_accept", "agent_result", "agent_send", "agents_list", "spawn_agent"]
PINNED = {
    "minimal": sorted(["read_file", *CODE]),
    "coding": sorted(
        [
            *CODE,
            *FILES,
            *MEMORY,
            "load_skill",
            "exec",
            "process",
            "verify",
            "run_tests",
            "diff",
            "history",
            "rollback",
        ]
    ),
    "live": sorted([*CODE, *LIVE, "verify", "load_skill", "add"]),
    "full": sorted(
        [*CODE, *FILES, *MEMORY, *LIVE, *AGENTS, "verify", "load_skill", "exec", "process", "add"]
    ),
}


@pytest.fixture
def rt(project):
    runtime = Runtime(project_root=project.root)
    yield runtime
    runtime.close()


def box_for(rt, project, **settings):
    packages = ["liveforge.tools", f"{project.pkg}.tools"]
    return Toolbox(
        policy=FULL_AUTO,
        runtime=rt,
        packages=packages,
        limit=8000,
        settings=ToolSettings(**settings),
    )


@pytest.mark.parametrize("profile", list(PINNED))
def test_each_profile_has_its_pinned_tools(rt, project, profile):
    """The project's own tool (add) counts as custom: in live and full only."""
    box = box_for(rt, project, profile=profile)
    assert sorted(spec.name for spec in box.specs()) == PINNED[profile]


def test_allow_and_deny_take_names_and_groups_and_deny_wins(rt, project):
    """coding + group:custom + patch, minus the shell group and (allowed and denied) patch."""
    box = box_for(
        rt,
        project,
        profile="coding",
        allow=["group:custom", "patch", "group:mine"],
        deny=["group:shell", "patch"],
        groups={"mine": ["persist"]},
    )
    names = {tool.name for tool in box.tools()}
    assert {"add", "persist"} <= names
    assert not names & {"exec", "process", "patch"}


def test_a_denied_tool_is_absent_and_refused_when_called_anyway(rt, project):
    """The model never sees it; a call by name is an error result that says why."""
    box = box_for(rt, project, profile="full", deny=["exec"])
    assert "exec" not in [spec.name for spec in box.specs()]
    refused = box.call("exec", {"command": "echo should-not-run"})
    assert refused.is_error
    assert "exec is not available in this session (tool profile 'full'" in refused.text
    assert "should-not-run" not in refused.text


def test_bad_profiles_and_groups_in_the_config_name_the_key(tmp_path):
    """A typo in [tool.liveforge.tools] is reported with the key and the known values."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.liveforge.tools]\nprofile = "coding"\ndeny = ["group:shel"]\n'
    )
    with pytest.raises(ConfigError, match=r"tools.*unknown tool group 'group:shel'.*group:shell"):
        load_config(tmp_path, env={})
    (tmp_path / "pyproject.toml").write_text('[tool.liveforge.tools]\nprofile = "everything"\n')
    with pytest.raises(ConfigError, match=r"tools\.profile"):
        load_config(tmp_path, env={})
    (tmp_path / "pyproject.toml").write_text(
        '[tool.liveforge.tools]\nprofile = "minimal"\n[tool.liveforge.tools.shell]\ndeny = ["rm"]\n'
    )
    assert load_config(tmp_path, env={}).tools.shell.deny == ["rm"]


def test_mcp_tools_are_a_group_of_their_own_and_patterns_name_a_server():
    """group:mcp is in coding (not minimal), group:custom no longer holds MCP tools, and
    `mcp__bank__*` in deny hides exactly one server's tools."""
    from liveforge.impls.tool_profiles import visible_names

    every = ["read_file", "view_source", "add", "mcp__shop__lookup", "mcp__bank__pay"]
    assert visible_names(ToolSettings(profile="minimal"), every) == {"read_file", "view_source"}
    coding = visible_names(ToolSettings(profile="coding"), every)
    assert {"mcp__shop__lookup", "mcp__bank__pay"} <= coding and "add" not in coding
    custom = visible_names(ToolSettings(profile="minimal", allow=["group:custom"]), every)
    assert "add" in custom and "mcp__shop__lookup" not in custom
    hidden = visible_names(ToolSettings(deny=["mcp__bank__*"]), every)
    assert hidden == set(every) - {"mcp__bank__pay"}
