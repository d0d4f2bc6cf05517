"""Wiring an `Agent` for a project: runtime, provider, toolbox, session, compactor, prompt.

    agent = build_agent(".")                          # new session, provider from config
    agent = build_agent(".", resume="latest")         # resume: conversation + changes back
    agent.session.live.restored                       # what resuming re-applied (lines),
                                                      # also reported by the first turn

Secrets: every API key of the provider's routes, and the values of environment variables
named like credentials (`_API_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD`, ...: the kernel's
`is_secret_name`), are scrubbed from the transcript.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Mapping
from pathlib import Path

import liveforge.impls  # noqa: F401  (registers every @impl body)
from liveforge.declarations.agent import Agent, AgentSettings
from liveforge.declarations.compaction import Compactor, ContextSettings
from liveforge.declarations.permissions import Approver, Policy
from liveforge.declarations.prompt import SystemPrompt
from liveforge.declarations.provider import Provider
from liveforge.declarations.session import Session
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.declarations.toolbox import Toolbox
from liveforge.impls.approvals import persist_guard
from liveforge.impls.self_patches import self_test_guard
from liveforge.kernel import Runtime
from liveforge.kernel._secrets import is_secret_name

__all__ = ["build_agent", "known_secrets", "open_toolbox"]

_DECLARATIONS = Path(inspect.getfile(Agent)).parent


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
    policy: Policy | None = None,
    approver: Approver | None = None,
) -> Agent:
    """An agent on the project at `project_root`, in a new session or a resumed one.

    `provider` defaults to the project's configured models (`liveforge.config`); `resume`
    is a session id or "latest". Resuming re-applies the session's unpersisted changes to
    the runtime (self-patches only once a turn ended cleanly with them);
    `agent.session.live.restored` says how each one went. The agent's runtime refuses
    patches to `liveforge.declarations` (by file location): the contracts and the
    turn-boundary watchdog stay whole whatever the agent patches. `policy`
    (default: `[tool.liveforge.permissions]`, else ``ask``) decides which tool calls run;
    `approver` answers the ones it asks about — without one they are refused, so an agent
    driven by a program changes nothing unless its policy allows it. `tool_settings`
    (default: the project's `[tool.liveforge.tools]`) choose the session's tool profile.
    """
    from liveforge.config import build_provider, load_config

    root = Path(project_root).resolve()
    if provider is None or policy is None or tool_settings is None:
        config = load_config(root, env)
        policy = policy or config.permissions.policy()
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
    if resume:
        session.restore(runtime, settings.self_packages)
    runtime.protect(_DECLARATIONS)
    toolbox = Toolbox(
        runtime=runtime,
        packages=list(tool_packages or []),
        limit=context.tool_result_limit,
        policy=policy,
        approver=approver,
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
    runtime.add_persist_guard(functools.partial(persist_guard, toolbox))
    # Re-applied self-patches have not run the loop yet in this process: on probation.
    epoch = f"{session.epoch}:"
    agent.safety_net().hold(
        [
            c.change_id
            for c in session.unpersisted()
            if c.self_patch and c.replaces and c.key.startswith(epoch)
        ]
    )
    return agent


def open_toolbox(
    rt: Runtime, *, policy: Policy | None = None, approver: Approver | None = None
) -> Toolbox:
    """The toolbox over `rt`: liveforge's tools plus the project's own tools package, under
    `policy` (default: ask, with nobody to ask — enough for the read and check tools), with
    the project's tool profile and settings (`[tool.liveforge.tools]`)."""
    from liveforge.config import load_config
    from liveforge.impls.toolbox import BUILTIN_PACKAGE, project_tool_packages

    packages = [BUILTIN_PACKAGE, *project_tool_packages(rt.project_root)]
    return Toolbox(
        runtime=rt,
        packages=packages,
        limit=1_000_000,
        policy=policy or Policy(),
        approver=approver,
        settings=load_config(rt.project_root).tools,
    )
