"""The agent as an MCP client: real FastMCP servers (a stdio child and a streamable-HTTP one on
loopback) configured in `.mcp.json`, driven by `liveforge run -p` against the fake provider."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from cli_support import run_cli
from test_chat import PROMPT, _say, _shown, _spawn

from liveforge.testing import FakeProvider, reply

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "tool_server.py"
KEY = "sk-test-provider-key-0123456789"


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The fixture server over streamable HTTP on an ephemeral loopback port; its URL."""
    port_file = tmp_path / "port"
    child = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text():
            assert child.poll() is None and time.monotonic() < deadline, "HTTP server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        child.terminate()
        child.wait(10)


def _configure(project: Path, url: str, report: Path) -> None:
    servers = {
        "shop": {
            "command": sys.executable,
            "args": [str(SERVER), "stdio"],
            "env": {"REPORT_FILE": str(report)},
        },
        "web": {"type": "http", "url": url, "headers": {"X-Token": "${SHOP_LABEL}"}},
        "broken": {
            "command": sys.executable,
            "args": ["-c", "import sys; sys.stderr.write('no config for broken\\n'); sys.exit(3)"],
        },
    }
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def _env(fake: FakeProvider) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": KEY,
        "LIVEFORGE_MODEL": "anthropic:test-model",
        "SHOP_LABEL": "label-42",
        "XDG_CONFIG_HOME": "/nonexistent-liveforge-test",
    }


def _results(fake: FakeProvider) -> list[dict]:
    """The tool results of each request after the first, in order."""
    return [
        block
        for request in fake.requests[1:]
        for block in request.body["messages"][-1]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _gone(pid: int, seconds: float) -> bool:
    """True once process `pid` has exited (gone, or a zombie) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if "State:\tZ" in Path(f"/proc/{pid}/status").read_text():
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_run_uses_mcp_tools_under_the_permission_policy(sample: Path, http_server: str):
    """In `ask` mode under `run -p` the agent sees both servers' tools with their schemas and
    calls them: the read-only ones run, the writing one is refused; the broken server is
    reported by name and the run still answers; no provider key reaches a server, and no
    server process is left afterwards."""
    report = sample / "report.json"
    _configure(sample, http_server, report)
    script = [
        reply.tool_call("mcp__shop__lookup", {"item": "apple"}),
        reply.tool_call("mcp__web__whoami", {}),
        reply.tool_call("mcp__shop__record", {"note": "restock apples"}),
        reply.tool_call("mcp__shop__lookup", {"item": "plum"}),
        reply.text("Apples cost 30 cents."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "price of apples?", cwd=sample, **_env(fake))
        tools = {t["name"]: t for t in fake.requests[0].body["tools"]}
        results = _results(fake)
    assert result.returncode == 4, result.stderr  # the refused write: not everything was done
    assert "Apples cost 30 cents." in result.stdout
    assert tools["mcp__shop__lookup"]["input_schema"]["properties"]["item"]["type"] == "string"
    assert tools["mcp__shop__lookup"]["input_schema"]["required"] == ["item"]
    assert {"mcp__shop__record", "mcp__web__lookup", "mcp__web__whoami"} <= set(tools)
    assert not any(name.startswith("mcp__broken__") for name in tools)
    looked, who, recorded, missing = results
    assert not looked.get("is_error") and "apple costs 30 cents" in str(looked["content"])
    who_text = json.loads(who["content"] if isinstance(who["content"], str) else "")
    assert who_text["token"] == "label-42"  # headers of the entry, ${VAR} filled in
    assert recorded["is_error"] is True and "needs the user's approval" in str(recorded["content"])
    assert missing["is_error"] is True and "no such item: plum" in str(missing["content"])
    assert not (sample / "notes.txt").exists()
    said = result.stdout + result.stderr
    assert "MCP server 'broken'" in said and "no config for broken" in said
    server = json.loads(report.read_text())
    assert "ANTHROPIC_API_KEY" not in server["env"] and KEY not in json.dumps(server["env"])
    assert server["env"]["REPORT_FILE"] == str(report)
    assert _gone(server["pid"], 2.0), "the stdio MCP server outlived the run"


def test_a_writing_mcp_tool_runs_with_yes(sample: Path, http_server: str):
    """With `--yes` the same writing tool runs and its effect is real."""
    _configure(sample, http_server, sample / "report.json")
    script = [
        reply.tool_call("mcp__shop__record", {"note": "restock apples"}),
        reply.text("Noted."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "note it", "--yes", cwd=sample, **_env(fake))
        [recorded] = _results(fake)
    assert result.returncode == 0, result.stderr
    assert not recorded.get("is_error") and "recorded: restock apples" in str(recorded["content"])
    assert (sample / "notes.txt").read_text() == "restock apples\n"


def test_deny_rules_and_profiles_take_mcp_patterns(sample: Path, http_server: str):
    """`deny = ["mcp__web__*"]` in the tool settings hides one server's tools; a permission
    rule `allow = ["mcp__shop__*"]` lets its writing tool run in `ask` mode."""
    _configure(sample, http_server, sample / "report.json")
    (sample / "liveforge.toml").write_text(
        '[tools]\ndeny = ["mcp__web__*"]\n\n[permissions]\nallow = ["mcp__shop__*"]\n'
    )
    script = [reply.tool_call("mcp__shop__record", {"note": "a"}), reply.text("ok")]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "note", cwd=sample, **_env(fake))
        names = {t["name"] for t in fake.requests[0].body["tools"]}
        [recorded] = _results(fake)
    assert result.returncode == 0, result.stderr
    assert "mcp__shop__record" in names and not any(n.startswith("mcp__web__") for n in names)
    assert not recorded.get("is_error")
    assert (sample / "notes.txt").read_text() == "a\n"


def test_mcp_list_shows_servers_states_and_tools(sample: Path, http_server: str):
    """`liveforge mcp list` starts each server once and shows its state and tools, with
    the failure of the broken one and the log holding its stderr."""
    _configure(sample, http_server, sample / "report.json")
    result = run_cli("mcp", "list", "--json", cwd=sample, SHOP_LABEL="t")
    assert result.returncode == 1, result.stderr  # one server failed
    data = json.loads(result.stdout)
    servers = {s["name"]: s for s in data["servers"]}
    assert servers["shop"]["state"] == "ready"
    assert {"name": "mcp__shop__lookup", "effect": "read"} in servers["shop"]["tools"]
    assert {"name": "mcp__shop__record", "effect": "write"} in servers["shop"]["tools"]
    assert servers["web"]["state"] == "ready" and servers["web"]["transport"] == "http"
    assert servers["broken"]["state"] == "failed"
    assert "no config for broken" in servers["broken"]["error"]
    assert "no config for broken" in Path(servers["broken"]["log"]).read_text()
    text = run_cli("mcp", "list", cwd=sample, SHOP_LABEL="t")
    assert "shop" in text.stdout and "mcp__shop__lookup (read-only)" in text.stdout
    assert "mcp__shop__record (may write)" in text.stdout
    assert "broken" in text.stdout and "failed" in text.stdout


def test_the_logs_of_stdio_servers_leave_git_status_clean(sample: Path):
    """`liveforge mcp list` in a git project writes a stdio server's log under
    `.liveforge/mcp/`, and `.liveforge/` comes with its `.gitignore`: git shows nothing."""
    servers = {"shop": {"command": sys.executable, "args": [str(SERVER), "stdio"]}}
    (sample / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "shop"]):
        subprocess.run([*git, *command], cwd=sample, check=True, capture_output=True)
    result = run_cli("mcp", "list", cwd=sample)
    assert result.returncode == 0, result.stderr
    assert (sample / ".liveforge" / "mcp" / "shop.log").is_file()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=sample, capture_output=True)
    assert status.stdout.decode() == ""


def test_a_bad_entry_is_reported_and_the_rest_work(sample: Path):
    """An entry naming an unset variable is left out with a message naming the server."""
    servers = {
        "shop": {"command": sys.executable, "args": [str(SERVER), "stdio"]},
        "needs": {"type": "http", "url": "${NOT_SET_ANYWHERE}/mcp"},
    }
    (sample / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    script = [reply.tool_call("mcp__shop__lookup", {"item": "pear"}), reply.text("45")]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "pear?", cwd=sample, **_env(fake))
        [looked] = _results(fake)
    assert result.returncode == 0, result.stderr
    assert "pear costs 45 cents" in str(looked["content"])
    said = result.stdout + result.stderr
    assert "MCP server 'needs'" in said and "${NOT_SET_ANYWHERE} is not set" in said


def test_a_slow_call_times_out_and_a_dead_server_is_reported(sample: Path):
    """A call past the entry's timeout comes back as an error naming the server; a server
    that dies during a call is reported to the user by name, and its tools are gone."""
    entry = {"command": sys.executable, "args": [str(SERVER), "stdio"], "timeout": 1}
    servers = {"slowpoke": entry, "doomed": entry}
    (sample / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    script = [
        reply.tool_call("mcp__slowpoke__slow", {"seconds": 3}),
        reply.tool_call("mcp__doomed__crash", {}),
        reply.tool_call("mcp__doomed__lookup", {"item": "pear"}),
        reply.text("The doomed server is down."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "go", cwd=sample, **_env(fake))
        slow, crashed, after = _results(fake)
        later_tools = {t["name"] for t in fake.requests[-1].body["tools"]}
    assert result.returncode == 0, result.stderr
    assert slow["is_error"] is True and "MCP server 'slowpoke'" in str(slow["content"])
    assert "Timed out" in str(slow["content"])
    assert crashed["is_error"] is True and "MCP server 'doomed'" in str(crashed["content"])
    assert after["is_error"] is True and "no tool named 'mcp__doomed__lookup'" in str(
        after["content"]
    )
    assert not any(name.startswith("mcp__doomed__") for name in later_tools)
    assert "mcp__slowpoke__lookup" in later_tools  # the other server keeps working
    said = result.stdout + result.stderr
    assert "MCP server 'doomed': it stopped working" in said


def test_chat_shows_the_servers_and_asks_before_a_writing_mcp_tool(sample: Path):
    """In `liveforge chat` (ask mode) /mcp lists the servers and their tools; the read-only
    tool runs unasked, the writing one waits for the person's yes and then runs."""
    servers = {"shop": {"command": sys.executable, "args": [str(SERVER), "stdio"]}}
    (sample / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    script = [
        reply.tool_call("mcp__shop__lookup", {"item": "pear"}),
        reply.tool_call("mcp__shop__record", {"note": "pears"}),
        reply.text("Noted the pears."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake)
        _say(child, "/mcp")
        _shown(child, "shop  [stdio]")
        _shown(child, "mcp__shop__lookup (read-only)")
        child.expect_exact(PROMPT)
        _say(child, "note the pear price")
        _shown(child, "The agent wants to run mcp__shop__record (write):")
        child.send("y\r")
        _shown(child, "Noted the pears.")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        looked = fake.requests[1].body["messages"][-1]["content"][0]
    assert "pear costs 45 cents" in str(looked["content"])
    assert (sample / "notes.txt").read_text() == "pears\n"
