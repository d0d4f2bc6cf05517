"""Helpers for the agent tests: a real fixture project on disk and agents on a FakeProvider."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from liveforge.agent_setup import build_agent
from liveforge.declarations.agent import Agent, AgentEvent, AgentSettings
from liveforge.declarations.compaction import ContextSettings
from liveforge.declarations.permissions import Policy
from liveforge.declarations.provider import Provider, RetryPolicy
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.kernel import Runtime
from liveforge.testing import FakeProvider

MOD = '''\
"""Circle helpers."""


def area(radius: float) -> float:
    """Area of a circle (rough)."""
    return 3 * radius * radius


def perimeter(radius: float) -> float:
    """Perimeter of a circle (rough)."""
    return 6 * radius
'''

TESTS = """\
from {pkg}.geometry import area


def test_area_of_unit_circle_is_close_to_pi():
    assert abs(area(1.0) - 3.14159) < 0.001
"""

FAST_RETRY = RetryPolicy(max_attempts=1, base_delay=0.0, total_budget=1.0, read_timeout=20.0)


@contextmanager
def fixture_project(root: Path) -> Iterator[tuple[Path, str]]:
    """A project folder with a uniquely named package, its tests and LIVEFORGE.md."""
    pkg = f"agentpkg_{uuid.uuid4().hex[:10]}"
    (root / pkg).mkdir(parents=True)
    (root / pkg / "__init__.py").write_text('"""A package the agent works on."""\n')
    (root / pkg / "geometry.py").write_text(MOD)
    (root / "tests").mkdir()
    (root / "tests" / f"test_{pkg}.py").write_text(TESTS.format(pkg=pkg))
    (root / "LIVEFORGE.md").write_text("Prefer math.pi over literal approximations.\n")
    try:
        yield root, pkg
    finally:
        for path in [p for p in sys.path if p == str(root)]:
            sys.path.remove(path)
        for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
            del sys.modules[name]


def make_agent(
    root: Path,
    fake: FakeProvider,
    *,
    protocol: str = "anthropic",
    resume: str | None = None,
    runtime: Runtime | None = None,
    settings: AgentSettings | None = None,
    context: ContextSettings | None = None,
    policy: Policy | None = None,
    tool_settings: ToolSettings | None = None,
) -> Agent:
    """An agent on `root` talking to `fake` over loopback HTTP (full-auto unless `policy`)."""
    route = fake.route(protocol, keys=["sk-test-secret-key-0123456789"])  # type: ignore[arg-type]
    provider = Provider([route], retry=FAST_RETRY)
    return build_agent(
        root,
        resume=resume,
        provider=provider,
        runtime=runtime,
        settings=settings or AgentSettings(),
        context=context,
        env={},
        policy=policy or Policy(mode="full-auto"),
        tool_settings=tool_settings,
    )


async def collect(agent: Agent, text: str) -> list[AgentEvent]:
    """Every event of one turn."""
    return [event async for event in agent.run(text)]


def run_turn(agent: Agent, text: str) -> list[AgentEvent]:
    """One turn, synchronously."""
    return asyncio.run(collect(agent, text))


def kinds(events: list[AgentEvent]) -> list[str]:
    """The `type` of each event."""
    return [e.type for e in events]


def of_type(events: list[AgentEvent], kind: str) -> list[Any]:
    """The events of one type."""
    return [e for e in events if e.type == kind]


def dedent(text: str) -> str:
    """Source text without the common indentation."""
    return textwrap.dedent(text).lstrip("\n")
