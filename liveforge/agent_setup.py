"""Wiring an `Agent` for a project: runtime, provider, toolbox, session, compactor, prompt.

    agent = build_agent(".")                          # new session, provider from config
    agent = build_agent(".", resume="latest")         # resume: conversation + changes back
    agent.session.extra["restored"]                   # what resuming re-applied (lines),
                                                      # also reported by the first turn

Secrets: every API key of the provider's routes, and the values of environment variables
named like credentials (`_API_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD`, ...: the kernel's
`is_secret_name`), are scrubbed from the transcript.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

import liveforge.impls  # noqa: F401  (registers every @impl body)
from liveforge.declarations.agent import Agent, AgentSettings
from liveforge.declarations.compaction import Compactor, ContextSettings
from liveforge.declarations.prompt import SystemPrompt
from liveforge.declarations.provider import Provider
from liveforge.declarations.session import Session
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.declarations.toolbox import Toolbox
from liveforge.impls.agent_turn import agent_state
from liveforge.impls.self_patches import self_test_guard
from liveforge.kernel import Runtime
from liveforge.kernel._secrets import is_secret_name

__all__ = ["build_agent", "known_secrets", "open_toolbox"]


def known_secrets(provider: Provider | None, env: Mapping[str, str] | None = None) -> list[str]:
    """Secret values to keep out of transcripts: route keys and key-like variables."""
    env = os.environ if env is None else env
    found = [
        c.key.get_secret_value()
        for r in (provider.routes if provider else [])
        for c in r.credentials
    ]
    for name, value in env.items():
        if is_secret_name(name):
            found += [part.strip() for part in value.split(",") if part.strip()]
    return found


def build_agent(
    project_root: str | Path = ".",
    *,
    resume: str | None = None,
    provider: Provider | None = None,
    runtime: Runtime | None = None,
    settings: AgentSettings | None = None,
    context: ContextSettings | None = None,
    tool_packages: list[str] | None = None,
    tool_settings: ToolSettings | None = None,
    env: Mapping[str, str] | None = None,
) -> Agent:
    """An agent on the project at `project_root`, in a new session or a resumed one.

    `provider` defaults to the project's configured models (`liveforge.config`); `resume`
    is a session id or "latest". Resuming re-applies the session's unpersisted changes to
    the runtime; `agent.session.extra["restored"]` says how each one went. `tool_settings`
    (default: the project's `[tool.liveforge.tools]`) choose the session's tool profile.
    """
    root = Path(project_root).resolve()
    if provider is None or tool_settings is None:
        from liveforge.config import build_provider, load_config

        config = load_config(root, env)
        tool_settings = tool_settings or config.tools
        if provider is None:
            provider = build_provider(config, env)
            settings = settings or config.agent_settings()
            context = context or config.context
    settings = settings or AgentSettings()
    context = context or ContextSettings()
    runtime = runtime or Runtime(project_root=root)
    secrets = known_secrets(provider, env)
    session = (
        Session.open(root, resume, secrets=secrets)
        if resume
        else Session.create(root, secrets=secrets)
    )
    session.extra["restored"] = session.restore(runtime, settings.self_packages) if resume else []
    toolbox = Toolbox(
        runtime=runtime,
        packages=list(tool_packages or []),
        limit=context.tool_result_limit,
        settings=tool_settings,
    )
    agent = Agent(
        runtime=runtime,
        provider=provider,
        toolbox=toolbox,
        session=session,
        compactor=Compactor(settings=context),
        prompt=SystemPrompt(runtime=runtime, toolbox=toolbox),
        settings=settings,
    )
    runtime.add_persist_guard(functools.partial(self_test_guard, agent))
    # Re-applied self-patches have not run the loop yet in this process: on probation.
    epoch = f"{session.extra['epoch']}:"
    agent_state(agent).unconfirmed = [
        c.change_id
        for c in session.unpersisted()
        if c.self_patch and c.replaces and c.key.startswith(epoch)
    ]
    return agent


def open_toolbox(rt: Runtime) -> Toolbox:
    """The toolbox over `rt`: liveforge's tools plus the project's own tools package, with
    the project's tool profile and settings (`[tool.liveforge.tools]`)."""
    from liveforge.config import load_config
    from liveforge.impls.toolbox import BUILTIN_PACKAGE, project_tool_packages

    packages = [BUILTIN_PACKAGE, *project_tool_packages(rt.project_root)]
    settings = load_config(rt.project_root).tools
    return Toolbox(runtime=rt, packages=packages, limit=1_000_000, settings=settings)
