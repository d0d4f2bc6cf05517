"""Review findings in the front ends, each pinned by a test that failed before its fix."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from cli_support import cli_env, run_cli
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from liveforge.config import load_config
from liveforge.testing import FakeProvider, reply


def _env(fake: FakeProvider) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "LIVEFORGE_MODEL": "anthropic:test-model",
    }


def test_run_honours_the_configured_agent_step_limit(sample: Path):
    """`[agent] max_steps` in liveforge.toml applies to `run -p` (it was replaced by
    defaults): with one step, a tool call ends the turn at its limit."""
    (sample / "liveforge.toml").write_text("[agent]\nmax_steps = 1\n")
    script = [reply.tool_call("view_source", {"path": "pricing.cart"}), reply.text("late")]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "look", "--json", cwd=sample, **_env(fake))
        sent = len(fake.requests)
    data = json.loads(result.stdout)
    assert data["reason"] == "turn_limit" and sent == 1


def test_a_bad_configuration_value_is_not_blamed_on_a_missing_key(sample: Path):
    """A bad value names its key and is not followed by the "set an API key" advice."""
    (sample / "liveforge.toml").write_text('max_tokens = "lots"\n')
    result = run_cli("run", "-p", "hi", cwd=sample, ANTHROPIC_API_KEY="test-key")
    assert result.returncode == 2
    assert "max_tokens" in result.stderr and "ANTHROPIC_API_KEY" not in result.stderr


def test_a_missing_key_still_says_which_variable_to_set(sample: Path):
    """Without any key, the error names the variable and points to the demo."""
    result = run_cli("run", "-p", "hi", cwd=sample)
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr and "liveforge demo" in result.stderr


def test_top_level_max_tokens_applies_when_the_agent_table_leaves_it_out(tmp_path: Path):
    """`max_tokens` at top level is the agent's output limit even with an `[agent]` table."""
    (tmp_path / "liveforge.toml").write_text("max_tokens = 1234\n[agent]\nmax_steps = 7\n")
    settings = load_config(tmp_path, env={}).agent_settings()
    assert settings.max_tokens == 1234 and settings.max_steps == 7


def test_mcp_results_redact_key_values_like_transcripts_do(sample: Path):
    """A tool result holding a key-like variable's value reaches the MCP client redacted."""
    secret = "sk-review-secret-0123456789"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "liveforge", "mcp", "--project", str(sample)],
        cwd=str(sample),
        env=cli_env(REVIEW_API_KEY=secret),
    )

    async def go() -> str:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            result = await s.call_tool(
                "execute", {"code": "import os\nos.environ['REVIEW_API_KEY']"}
            )
            return str(result.content[0].text)

    text = asyncio.run(asyncio.wait_for(go(), timeout=120))
    assert secret not in text and "[redacted]" in text


def test_clear_then_resume_brings_back_the_unpersisted_patch(sample: Path):
    """After /clear the new session (the one --resume picks) holds the in-memory changes."""
    from io import StringIO

    from cli_support import FIX
    from rich.console import Console

    from liveforge.cli.chat._slash import ChatState, dispatch
    from liveforge.cli.turns._agent import make_agent
    from liveforge.cli.turns._render import Renderer
    from liveforge.declarations.provider import Provider
    from liveforge.declarations.session import Session

    with FakeProvider(script=[]) as fake:
        agent = make_agent(sample, provider=Provider([fake.route("anthropic")]), mode="auto-edit")
        try:
            agent.toolbox.call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX})
            console = Console(file=StringIO())

            async def no(question: str) -> bool:
                return False

            state = ChatState(
                agent=agent,
                console=console,
                renderer=Renderer(console),
                project=sample,
                model="m",
                confirm=no,
                switch_model=lambda name: name,
            )
            asyncio.run(dispatch(state, "/clear"))
            new_id = agent.session.id
        finally:
            asyncio.run(agent.aclose())
            agent.runtime.close()
            for path in [p for p in sys.path if p == str(sample)]:
                sys.path.remove(path)
            for name in [n for n in sys.modules if n == "pricing" or n.startswith("pricing.")]:
                del sys.modules[name]
    resumed = Session.open(sample, "latest")
    assert resumed.id == new_id
    assert [c.target for c in resumed.unpersisted()] == ["pricing.cart.Line.subtotal"]


def test_ctrl_c_during_execute_still_prints_the_json_report(sample: Path, tmp_path: Path):
    """`run -p --json` interrupted while `execute` runs (and captures sys.stdout) still
    prints its report on stdout, with reason cancelled and exit code 130, and says that it
    waits for the running call before exiting."""
    import signal
    import subprocess
    import time

    marker = tmp_path / "started"
    code = f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(3)"
    script = [reply.tool_call("execute", {"code": code, "timeout": 30}), reply.text("late")]
    with FakeProvider(script=script) as fake:
        child = subprocess.Popen(
            [sys.executable, "-m", "liveforge", "run", "-p", "slow", "--json", "--yes"],
            cwd=sample,
            env=cli_env(**_env(fake)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not marker.exists() and child.poll() is None:
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    data = json.loads(out)
    assert data["reason"] == "cancelled" and data["ok"] is False
    assert "a cancelled tool call is still running" in err


def test_an_empty_task_is_a_usage_error_not_a_model_request(sample: Path):
    """`run -p ""` (or an empty stdin with -p -) exits 2 without calling the model."""
    with FakeProvider(script=[reply.text("never")]) as fake:
        empty = run_cli("run", "-p", "  ", cwd=sample, **_env(fake))
        piped = run_cli("run", "-p", "-", cwd=sample, input="", **_env(fake))
        sent = len(fake.requests)
    assert (empty.returncode, piped.returncode, sent) == (2, 2, 0)
    assert "-p needs a task" in empty.stderr
