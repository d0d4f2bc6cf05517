"""A forked sub-agent: one agent in a process of its own, on a copy of its parent's live state.

The parent (`liveforge.impls.subagents`) starts `python -m liveforge.subagent_process` and
writes one JSON line to its standard input, which it keeps open while this process runs:
when the pipe closes (the parent died, even by SIGKILL, or stopped waiting) this process
kills its process group and itself at once, whatever it is doing. The line holds the
project, the task, the provider's routes (keys included: they travel over the pipe only),
the settings, the parent's unpersisted module sources (the overlay) and where to write the
result. This process applies the
overlay to a fresh runtime, runs the task under the parent's tool settings and permission
rules with the tools the parent allows it except those that write files or run shells
(nothing it does reaches the files or the parent), and writes a JSON result:
the answer, and the modules it changed with their new source — the proposal the parent may
accept (`agent_accept`) or leave.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from liveforge.agent_setup import build_agent, link_session
from liveforge.declarations.agent import Agent, AgentSettings
from liveforge.declarations.compaction import ContextSettings
from liveforge.declarations.permissions import Policy, Rules, effect_of
from liveforge.declarations.provider import Provider, RetryPolicy, Route
from liveforge.declarations.subagents import ChildSpec
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.impls.subagents import close_subagents
from liveforge.kernel import Runtime
from liveforge.kernel.boundary._secrets import hold

__all__ = ["main"]

_HELD_BACK = ("write", "shell")
"""Effects of the tools a forked sub-agent does not get: its work stays in its process."""


def _apply_overlay(rt: Runtime, overlay: dict[str, Any]) -> None:
    for name, module in overlay.items():
        try:
            importlib.import_module(name)  # a file-backed module stays file-backed
        except Exception:
            pass  # memory-only in the parent: created as such here
        rt.patch_module(name, module["source"], is_package=module["is_package"])


def _agent(payload: dict[str, Any], rt: Runtime) -> Agent:
    spec = ChildSpec.model_validate(payload["spec"])
    for route in payload["routes"]:  # keep the kernel's copies (a live check blanks them)
        for credential in route["credentials"]:
            credential["key"] = hold(credential["key"])
    provider = Provider(
        [Route.model_validate(r) for r in payload["routes"]],
        retry=RetryPolicy.model_validate(payload["retry"]),
    )
    agent = build_agent(
        payload["project_root"],
        provider=provider,
        runtime=rt,
        settings=AgentSettings.model_validate(payload["settings"]),
        context=ContextSettings.model_validate(payload["context"]),
        tool_settings=ToolSettings.model_validate(payload["tool_settings"]),
        policy=Policy(
            mode=payload["mode"],
            rules=Rules(**{kind: tuple(names) for kind, names in payload["rules"].items()}),
        ),
    )
    link_session(agent.session, payload["parent_session"], payload["parent_transcript"], spec)
    allowed = payload["tools"]  # None: every tool the parent's tool settings let through
    agent.toolbox.only = [
        t.name
        for t in agent.toolbox.tools()
        if effect_of(t.func) not in _HELD_BACK and (allowed is None or t.name in allowed)
    ]
    return agent


async def _run(agent: Agent, task: str) -> dict[str, Any]:
    out: dict[str, Any] = {"answer": "", "error": "", "reason": "", "tokens": 0}
    async for event in agent.run(task):
        if event.type == "final_answer":
            out["answer"] = event.text
        elif event.type == "error":
            out["error"] = event.message
        elif event.type == "turn_ended":
            out["reason"] = event.reason
            out["tokens"] = event.usage.total_input_tokens + event.usage.output_tokens
    await agent.provider.aclose()
    return out


def _watch_parent() -> None:
    """End this process and its group as soon as the parent's end of stdin closes."""

    def watch() -> None:
        while os.read(sys.stdin.fileno(), 65536):
            pass  # the parent sends nothing more; only the end of the pipe matters
        os.killpg(os.getpgrp(), signal.SIGKILL)  # what this process started, and itself

    threading.Thread(target=watch, name="liveforge-parent-watch", daemon=True).start()


def main() -> int:
    """Read the payload line from stdin, run the task, write the result file; exit 0."""
    payload = json.loads(sys.stdin.buffer.readline())
    _watch_parent()
    rt = Runtime(project_root=payload["project_root"])
    agent: Agent | None = None
    try:
        _apply_overlay(rt, payload["overlay"])
        agent = _agent(payload, rt)
        result = asyncio.run(_run(agent, payload["task"]))
        # Its own sub-agents still at work are cancelled and end their turns (their changes
        # before that are part of the proposal), not cut off mid-request when this exits.
        close_subagents(agent)
        overlay = payload["overlay"]
        result["changes"] = {
            r.name: {"source": r.source, "is_package": r.is_package}
            for r in rt.changed_modules()
            if overlay.get(r.name, {}).get("source") != r.source
        }
        result.update(session_id=agent.session.id, transcript=str(agent.session.path))
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}", "reason": "error", "changes": {}}
    finally:
        if agent is not None:
            close_subagents(agent)  # after a fault too (a no-op when none runs)
        rt.close()
    Path(payload["result_path"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
