"""A real `liveforge acp` child process for tests, driven through the ACP SDK's client side
as an editor drives it, its model the fake provider over loopback HTTP."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp import spawn_agent_process

from liveforge.testing import FakeProvider


def acp_env(fake: FakeProvider) -> dict[str, str]:
    """The agent's environment: `fake` as its Anthropic endpoint, no user configuration."""
    return {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "LIVEFORGE_MODEL": "anthropic:test-model",
        "XDG_CONFIG_HOME": "/nonexistent-liveforge-test",
    }


@contextlib.asynccontextmanager
async def acp_agent(
    editor: Any, fake: FakeProvider, project: Path, *, append: bool = False
) -> AsyncIterator[tuple[Any, Any]]:
    """`(connection, process)` of `liveforge acp` started in `project` for `editor`; its
    standard error goes to `project/acp-stderr.log` (appended to with `append`)."""
    with (project / "acp-stderr.log").open("a" if append else "w") as log:
        async with spawn_agent_process(
            editor,
            sys.executable,
            "-m",
            "liveforge",
            "acp",
            env=acp_env(fake),
            cwd=project,
            transport_kwargs={"stderr": log.fileno()},
        ) as (conn, process):
            yield conn, process
