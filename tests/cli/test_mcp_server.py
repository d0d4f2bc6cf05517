"""`liveforge mcp` driven by the official MCP client over stdio: one live runtime per server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from cli_support import FIX, cli_env
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from secret_leaks import KEY, LEAKS, leaked

import liveforge.impls  # noqa: F401  (registers the Toolbox bodies)
from liveforge import Runtime
from liveforge.agent_setup import open_toolbox


def _session(
    project: Path,
    calls: Any,
    received: list[Any] | None = None,
    *options: str,
    env: dict[str, str] | None = None,
) -> Any:
    """Run `calls(session)` against a `liveforge mcp` child serving `project` (with command
    line `options` and extra environment `env`); messages the server sends on its own
    (notifications) go to `received`."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "liveforge", "mcp", "--project", str(project), *options],
        cwd=str(project),
        env=cli_env(**(env or {})),
    )

    async def keep(message: Any) -> None:
        if received is not None:
            received.append(message)

    async def go() -> Any:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, message_handler=keep) as s,
        ):
            await s.initialize()
            return await calls(s)

    return asyncio.run(asyncio.wait_for(go(), timeout=120))


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def test_tools_listed_with_the_toolbox_schemas(sample: Path):
    """tools/list gives exactly the Toolbox's specs: names, descriptions, input schemas."""
    listed = _session(sample, lambda s: s.list_tools())
    rt = Runtime(project_root=sample)
    try:
        expected = {spec.name: spec for spec in open_toolbox(rt).specs()}
    finally:
        rt.close()
    got = {tool.name: tool for tool in listed.tools}
    assert set(got) == set(expected) >= {"inspect_module", "view_source", "patch", "verify"}
    for name, tool in got.items():
        assert tool.inputSchema == expected[name].input_schema
        assert tool.description == expected[name].description


def test_a_patch_is_seen_by_later_calls_and_verified(sample: Path):
    """inspect, patch, then view and verify in later calls see the patched method."""

    async def calls(s: ClientSession) -> list[Any]:
        return [
            await s.call_tool("inspect_module", {"path": "pricing"}),
            await s.call_tool("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
            await s.call_tool("view_source", {"path": "pricing.cart.Line.subtotal"}),
            await s.call_tool(
                "verify",
                {"code": "from pricing import Line\nassert Line('pen', 100, 10).subtotal() == 900"},
            ),
            await s.call_tool("diff", {}),
        ]

    inspected, patched, viewed, verified, diff = _session(sample, calls)
    assert not inspected.isError and "cart" in _text(inspected)
    assert not patched.isError and "pricing.cart.Line.subtotal" in _text(patched)
    assert "self.quantity >= BULK_QUANTITY" in _text(viewed)
    assert not verified.isError and "passed" in _text(verified)
    assert "\nlive process: passed in " in _text(verified)  # the fork of the server, too
    assert "+        if self.quantity >= BULK_QUANTITY:" in _text(diff)
    assert ">= BULK" not in (sample / "pricing" / "cart.py").read_text()


def test_model_mistakes_come_back_as_error_results(sample: Path):
    """An unknown target and bad arguments are isError results; the server keeps serving."""

    async def calls(s: ClientSession) -> list[Any]:
        return [
            await s.call_tool("view_source", {"path": "pricing.nothing_here"}),
            await s.call_tool("patch", {"path": "pricing.cart.Line.subtotal"}),
            await s.call_tool("view_source", {"path": "pricing.coupons.parse_coupon"}),
        ]

    missing, bad_args, fine = _session(sample, calls)
    assert missing.isError and "nothing_here" in _text(missing)
    assert bad_args.isError and "source" in _text(bad_args)
    assert not fine.isError and "def parse_coupon" in _text(fine)


def test_a_tool_module_made_in_memory_is_listed_and_callable(sample: Path):
    """A tool module patched into liveforge.tools over MCP appears in the next tools/list,
    and the client is told the list changed."""
    source = (
        '"""Counting tools."""\n\nfrom liveforge.tools import runtime\n\n'
        '__all__ = ["count_changes"]\n\n\ndef count_changes() -> str:\n'
        '    """How many changes this session made."""\n'
        '    return f"{len(runtime().history())} changes"\n'
    )

    async def calls(s: ClientSession) -> list[Any]:
        before = await s.list_tools()
        made = await s.call_tool(
            "patch", {"path": "liveforge.tools.counting", "source": source, "module": True}
        )
        after = await s.list_tools()
        return [before, made, after, await s.call_tool("count_changes", {})]

    received: list[Any] = []
    before, made, after, counted = _session(sample, calls, received)
    assert not made.isError, _text(made)
    assert "count_changes" not in {t.name for t in before.tools}
    assert "count_changes" in {t.name for t in after.tools}
    assert _text(counted) == "1 changes"
    kinds = [type(getattr(m, "root", m)).__name__ for m in received]
    assert "ToolListChangedNotification" in kinds


def test_tools_carry_annotations_from_their_effect(sample: Path):
    """readOnlyHint / destructiveHint / idempotentHint follow each tool's declared effect."""
    listed = {t.name: t.annotations for t in _session(sample, lambda s: s.list_tools()).tools}
    assert listed["view_source"].readOnlyHint and listed["verify"].readOnlyHint
    assert listed["view_source"].idempotentHint and not listed["view_source"].destructiveHint
    assert not listed["patch"].readOnlyHint and not listed["patch"].destructiveHint
    assert listed["persist"].destructiveHint and not listed["persist"].readOnlyHint
    assert listed["execute"].destructiveHint and listed["execute"].openWorldHint


def test_read_only_mode_refuses_writes_with_a_message_and_keeps_looking(sample: Path):
    """`liveforge mcp --mode read-only`: view and verify work; patch and execute are refused
    with a message the client's model can act on, and nothing changes."""

    async def calls(s: ClientSession) -> list[Any]:
        return [
            await s.call_tool("view_source", {"path": "pricing.cart.Line.subtotal"}),
            await s.call_tool("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
            await s.call_tool("execute", {"code": "open('pricing/x.txt', 'w').write('x')"}),
            await s.call_tool("diff", {}),
        ]

    viewed, patched, executed, diff = _session(sample, calls, None, "--mode", "read-only")
    assert not viewed.isError and "subtotal" in _text(viewed)
    for refused in (patched, executed):
        assert refused.isError and "refused by 'read-only' mode" in _text(refused)
        assert "Do not retry" in _text(refused)
    assert _text(diff) == "no changes" and not (sample / "pricing" / "x.txt").exists()


def test_secrets_a_check_prints_reach_no_mcp_result(sample: Path):
    """A key the server has in its environment, printed by a `verify` snippet as repr,
    JSON, URL-encoded, base64 and hex (and returned as its value), comes back to the MCP
    client as [redacted] only, from the fresh import and from the live process."""
    (sample / ".env").write_text(f"FAKE_API_KEY={KEY}\n")

    async def calls(s: ClientSession) -> Any:
        return await s.call_tool("verify", {"code": LEAKS})

    verified = _session(sample, calls, env={"FAKE_API_KEY": KEY})
    text = _text(verified)
    assert not verified.isError and "live process: passed" in text, text
    assert "[redacted]" in text and not leaked(text)


def test_a_stdlib_patch_needs_the_tool_argument_and_names_itself_when_it_breaks_a_check(
    sample: Path,
):
    """Over MCP, patching json.dumps is refused with the tool's own argument named; with
    outside_project=true it applies, the server keeps answering, and a check it breaks says
    that json is the cause."""
    source = "def dumps(obj, **kw):\n    return 'PATCHED'\n"

    async def calls(s: ClientSession) -> list[Any]:
        return [
            await s.call_tool("patch", {"path": "json.dumps", "source": source}),
            await s.call_tool(
                "patch", {"path": "json.dumps", "source": source, "outside_project": True}
            ),
            await s.call_tool("verify", {"code": "1 + 1"}),
            await s.call_tool("rollback", {}),
            await s.call_tool("verify", {"code": "1 + 1"}),
        ]

    refused, patched, broken, undone, verified = _session(sample, calls)
    assert refused.isError and "outside_project=true" in _text(refused)
    assert "outside_project=True" not in _text(refused)
    assert not patched.isError, _text(patched)
    assert broken.isError and "The patched module json is not the project's own code" in (
        _text(broken)
    )
    assert not undone.isError and not verified.isError and "passed" in _text(verified)
