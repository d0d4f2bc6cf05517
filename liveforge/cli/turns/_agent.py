"""Building an agent for a front end, and driving one turn of it on a terminal.

Shared by `chat`, `run` and `demo`: the provider comes from the project's configuration
(or is given, as the demo's replay is); a missing key becomes a usage error that names the
variable to set. The agent's permission policy is the project's `[tool.liveforge.permissions]`
with the command line's `--mode` (or `--yes`) over it; the front end answers its questions.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from liveforge.cli._common import CommandError
from liveforge.cli.checks._cancel import stop_running_checks
from liveforge.cli.turns._render import Renderer
from liveforge.declarations.tool_settings import PROFILES
from liveforge.kernel.errors import ConfigError

if TYPE_CHECKING:
    from liveforge.config import LiveforgeConfig
    from liveforge.declarations.agent import Agent, TurnEnded
    from liveforge.declarations.permissions import Approver, Mode, Policy
    from liveforge.declarations.provider import Provider

__all__ = [
    "NO_PROVIDER_HINT",
    "add_profile",
    "configured_provider",
    "drive_turn",
    "make_agent",
    "model_name",
    "policy_of",
]

T = TypeVar("T")
NO_PROVIDER_HINT = (
    "Set that key, or pick another model with LIVEFORGE_MODEL "
    "(or --model): anthropic:claude-sonnet-4-5 needs ANTHROPIC_API_KEY, openai:gpt-4o needs "
    "OPENAI_API_KEY, ollama:llama3.1 needs a running Ollama and no key. To see liveforge "
    "work without any key or network, run `liveforge demo`."
)


def model_name(provider: Provider) -> str:
    """The display name of the provider's primary route."""
    routes = getattr(provider, "routes", [])
    return routes[0].name if routes else "?"


def configured_provider(project: Path, model: str | None = None) -> tuple[Provider, int]:
    """The project's configured provider (primary model `model` if given) and max_tokens."""
    from liveforge.config import build_provider

    config = _config(project, model)
    return _checked(lambda: build_provider(config)), config.max_tokens


def _config(project: Path, model: str | None) -> LiveforgeConfig:
    """The project's validated configuration, with `model` as the only model if given."""
    from liveforge.config import load_config, parse_model

    def load() -> LiveforgeConfig:
        config = load_config(project)
        if model:
            parse_model(model)
            config = config.model_copy(update={"model": model, "fallback_models": []})
        return config

    return _checked(load)


def add_profile(parser: argparse.ArgumentParser) -> None:
    """The ``--profile`` option of the commands that run the agent."""
    parser.add_argument(
        "--profile",
        choices=list(PROFILES),
        help="the tools the model gets this session: minimal, coding, live (inspect, patch, "
        "verify, persist) or full (default: configured, else full)",
    )


def _checked(build: Callable[[], T]) -> T:
    """`build()`, its configuration errors as usage errors that say what to set."""
    try:
        return build()
    except ConfigError as exc:
        # only a missing key is fixed by choosing a provider; a bad value by editing it
        hint = f"\n{NO_PROVIDER_HINT}" if exc.key.endswith("api_key_env") else ""
        raise CommandError(f"{exc}{hint}") from None
    except ValueError as exc:
        raise CommandError(f"--model: {exc}") from None


def make_agent(
    project: Path,
    *,
    provider: Provider | None = None,
    model: str | None = None,
    resume: str | None = None,
    mode: Mode | None = None,
    approver: Approver | None = None,
    profile: str | None = None,
) -> Agent:
    """An agent on `project` whose tool calls follow the project's permission policy, in
    `mode` if given; `approver` answers the calls the policy asks about.

    Without `provider`, the project's configuration gives the models and the `[agent]` and
    `[context]` settings. `profile` replaces the configured tool profile for this session."""
    from liveforge.agent_setup import build_agent
    from liveforge.config import build_provider

    settings = context = None
    config = _config(project, model)
    if provider is None:
        provider = _checked(lambda: build_provider(config))
        settings, context = config.agent_settings(), config.context
    tools = config.tools.model_copy(update={"profile": profile}) if profile else config.tools
    return build_agent(
        project,
        provider=provider,
        resume=resume,
        settings=settings,
        context=context,
        policy=config.permissions.policy(mode),
        approver=approver,
        tool_settings=tools,
    )


def policy_of(agent: Agent) -> Policy:
    """The permission policy the agent's toolbox applies."""

    return agent.toolbox.policy


async def drive_turn(agent: Agent, renderer: Renderer, text: str) -> TurnEnded:
    """Run one turn, rendering its events; Ctrl-C (SIGINT) cancels the turn only, and stops
    a sandbox check that a tool call is running."""
    loop = asyncio.get_running_loop()

    def interrupt() -> None:
        agent.cancel()
        stop_running_checks(agent.runtime)

    loop.add_signal_handler(signal.SIGINT, interrupt)
    renderer.progress = lambda: turn.model if (turn := agent.state.turn) is not None else None
    if renderer.runs is None:  # check lines show the value or the failing tests
        renderer.runs = agent.runtime.run
    last: Any = None
    try:
        async for event in agent.run(text):
            renderer.event(event)
            last = event
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        renderer.close()
    return last
