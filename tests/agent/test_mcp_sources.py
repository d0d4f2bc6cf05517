"""MCP servers as a tool source of agents built with the API: the user's settings and the
project's `.mcp.json`, sub-agents by their tool profile, and no server left after `aclose`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agent_support import collect, make_agent

from liveforge.impls.mcp_config import load_mcp_config
from liveforge.testing import reply

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "tool_server.py"


def _stdio(**extra: object) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(SERVER), "stdio"], **extra}


def test_user_settings_and_the_project_file_merge_the_project_winning(tmp_path: Path):
    """The user's mcp.json lists servers for every project; the project's entry of the same
    name wins; ${VAR:-default} is filled in; an unsupported type is named and left out."""
    home = tmp_path / "config"
    (home / "liveforge").mkdir(parents=True)
    user = {"mcpServers": {"shop": _stdio(), "mine": _stdio(args=["${ARG:-fallback}"])}}
    (home / "liveforge" / "mcp.json").write_text(json.dumps(user))
    project = tmp_path / "project"
    project.mkdir()
    local = {"mcpServers": {"shop": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}
    local["mcpServers"]["old"] = {"type": "sse", "url": "http://127.0.0.1:9/sse"}
    (project / ".mcp.json").write_text(json.dumps(local))
    config = load_mcp_config(project, {"XDG_CONFIG_HOME": str(home)})
    assert config.servers["shop"].type == "http"
    assert config.origins["shop"].endswith(".mcp.json")
    assert config.servers["mine"].args == ["fallback"]  # type: ignore[union-attr]
    assert "old" not in config.servers
    [problem] = config.problems
    assert "MCP server 'old'" in problem and "type 'sse' is not supported" in problem


def test_liveforge_config_home_holds_the_user_s_mcp_json_as_it_holds_skills(tmp_path: Path):
    """With $LIVEFORGE_CONFIG_HOME set, the user's servers are read from its mcp.json (the
    folder whose skills/ holds the user's skills), not from $XDG_CONFIG_HOME's."""
    home, xdg = tmp_path / "lf", tmp_path / "xdg"
    (xdg / "liveforge").mkdir(parents=True)
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"mine": _stdio()}}))
    (xdg / "liveforge" / "mcp.json").write_text(json.dumps({"mcpServers": {"xdg": _stdio()}}))
    (tmp_path / "project").mkdir()
    env = {"LIVEFORGE_CONFIG_HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}
    assert list(load_mcp_config(tmp_path / "project", env).servers) == ["mine"]
    assert list(load_mcp_config(tmp_path / "project", {"XDG_CONFIG_HOME": str(xdg)}).servers) == [
        "xdg"
    ]


def test_a_read_sub_agent_gets_the_read_only_mcp_tools_only(project, fake):
    """A sub-agent spawned with `tools="read"` is offered the servers' read-only tools, not
    the writing one, and calls them through its parent's running server; after `aclose`
    no server process is left."""
    root, _ = project
    (root / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"shop": _stdio(env={"REPORT_FILE": str(root / "pid.json")})}})
    )
    fake.add(
        reply.tool_call("spawn_agent", {"task": "price?", "model": "kid", "tools": "read"}),
        reply.tool_call("agent_result", {"agent_id": "a.1", "wait": 120}),
        reply.text("Done."),
    )
    fake.add(reply.tool_call("mcp__shop__lookup", {"item": "pear"}), reply.text("45"), model="kid")
    agent = make_agent(root, fake)

    async def turn_then_close() -> None:
        try:
            await collect(agent, "ask a helper")
        finally:
            await agent.aclose()

    asyncio.run(turn_then_close())
    kid = [r for r in fake.requests if r.body["model"] == "kid"]
    offered = {tool["name"] for tool in kid[0].body["tools"]}
    assert "mcp__shop__lookup" in offered and "mcp__shop__record" not in offered
    answer = kid[1].body["messages"][-1]["content"][0]
    assert "pear costs 45 cents" in str(answer["content"])
    pid = json.loads((root / "pid.json").read_text())["pid"]
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "State:\tZ" in status.read_text()
