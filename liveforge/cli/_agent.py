"""Building an agent for a front end, and driving one turn of it on a terminal.

Shared by `chat`, `run` and `demo`: the provider comes from the project's configuration
(or is given, as the demo's replay is); a missing key becomes a usage error that names the
variable to set. `ApprovingToolbox` asks the person before a tool writes files.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.cli._common import CommandError
from liveforge.cli._render import Renderer
from liveforge.declarations.toolbox import Toolbox, ToolResult
from liveforge.kernel.errors import ConfigError

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent, TurnEnded
    from liveforge.declarations.provider import Provider

__all__ = ["NO_PROVIDER_HINT", "ApprovingToolbox", "configured_provider", "drive_turn",
           "make_agent", "model_name"]

WRITING_TOOLS = frozenset({"persist"})
"""Tools that write files: the person approves each call (unless approvals are skipped)."""

NO_PROVIDER_HINT = (
    "Set the key of the default model's provider, or pick another model with LIVEFORGE_MODEL "
    "(or --model): anthropic:claude-sonnet-4-5 needs ANTHROPIC_API_KEY, openai:gpt-4o needs "
    "OPENAI_API_KEY, ollama:llama3.1 needs a running Ollama and no key. To see liveforge "
    "work without any key or network, run `liveforge demo`.")


class ApprovingToolbox(Toolbox):
    """A Toolbox that asks `approver(name, arguments)` before a tool that writes files.

    Set `approver` after construction; a declined call comes back to the model as an
    error result saying the person declined, so the model can carry on.
    """

    def call(self, name: str, arguments: dict[str, Any] | str,
             timeout: float | None = None) -> ToolResult:
        """Ask first for writing tools, then dispatch as the Toolbox does."""
        approver: Callable[[str, Any], bool] | None = getattr(self, "approver", None)
        if name in WRITING_TOOLS and approver is not None and not approver(name, arguments):
            return ToolResult(f"the user declined the {name} call; the changes stay in memory "
                              "only. Ask what they want instead of retrying.", is_error=True)
        return super().call(name, arguments, timeout)


def model_name(provider: Provider) -> str:
    """The display name of the provider's primary route."""
    routes = getattr(provider, "routes", [])
    return routes[0].name if routes else "?"


def configured_provider(project: Path, model: str | None = None) -> tuple[Provider, int]:
    """The project's configured provider (primary model `model` if given) and max_tokens."""
    from liveforge.config import build_provider, load_config, parse_model

    try:
        config = load_config(project)
        if model:
            parse_model(model)
            config = config.model_copy(update={"model": model, "fallback_models": []})
        return build_provider(config), config.max_tokens
    except ConfigError as exc:
        raise CommandError(f"{exc}\n{NO_PROVIDER_HINT}") from None
    except ValueError as exc:
        raise CommandError(f"--model: {exc}") from None


def make_agent(project: Path, *, provider: Provider | None = None, model: str | None = None,
               resume: str | None = None) -> Agent:
    """An agent on `project` whose toolbox asks before writing (see `ApprovingToolbox`)."""
    from liveforge.agent_setup import build_agent
    from liveforge.declarations.agent import AgentSettings

    settings = None
    if provider is None:
        provider, max_tokens = configured_provider(project, model)
        settings = AgentSettings(max_tokens=max_tokens)
    agent = build_agent(project, provider=provider, resume=resume, settings=settings)
    old = agent.toolbox
    toolbox = ApprovingToolbox(runtime=old.runtime, packages=list(old.packages),
                               limit=old.limit)
    agent.toolbox = toolbox
    agent.prompt.toolbox = toolbox
    return agent


async def drive_turn(agent: Agent, renderer: Renderer, text: str) -> TurnEnded:
    """Run one turn, rendering its events; Ctrl-C (SIGINT) cancels the turn only."""
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, agent.cancel)
    last: Any = None
    try:
        async for event in agent.run(text):
            renderer.event(event)
            last = event
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        renderer.close()
    return last
