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
from liveforge.declarations.plugins import PluginHost
from liveforge.declarations.prompt import SystemPrompt
from liveforge.declarations.provider import Provider
from liveforge.declarations.session import Session
from liveforge.declarations.subagents import ChildSpec, SubAgents
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.declarations.toolbox import Toolbox, ToolSource
from liveforge.impls.approvals import persist_guard
from liveforge.impls.live_program import changes_of, holding, lane_of
from liveforge.impls.mcp_client import McpServers
from liveforge.impls.mcp_config import load_mcp_config
from liveforge.impls.plugins import attach
from liveforge.impls.self_patches import self_test_guard
from liveforge.impls.subagents import child_tools, routes_for
from liveforge.kernel import Runtime
from liveforge.kernel.boundary._secrets import is_secret_name, register_secrets

__all__ = ["build_agent", "known_secrets", "link_session", "mcp_servers", "open_toolbox"]

_DECLARATIONS = Path(inspect.getfile(Agent)).parent


def known_secrets(provider: Provider | None, env: Mapping[str, str] | None = None) -> list[str]:
    """Secret values to keep out of transcripts: route keys and key-like variables, as the
    kernel's held copies (`hold`: registered as secrets; a live check's fork blanks them)."""
    env = os.environ if env is None else env
    found = [
        c.key.get_secret_value()
        for r in (provider.routes if provider else [])
        for c in r.credentials
    ]
    for name, value in env.items():
        if is_secret_name(name):
            found += [part.strip() for part in value.split(",") if part.strip()]
    return register_secrets(found)


def _plugin_tool_modules(plugins: PluginHost) -> list[str]:
    found = plugins.call("liveforge_tool_modules")
    return [m for names in found for m in ([names] if isinstance(names, str) else names)]


def link_session(
    session: Session, parent_id: str, parent_transcript: str, spec: ChildSpec, *, lane: str = ""
) -> None:
    """Mark `session` as the sub-agent `spec`'s and name its parent in its transcript; its
    work belongs to `lane` (the parent's top-level session; default: the parent)."""
    session.live.parent_session = parent_id
    session.live.lane = lane or parent_id
    session.live.subagent_id = spec.agent_id
    session.live.subagent_depth = spec.depth
    session.note(
        "parent",
        f"sub-agent {spec.agent_id} of session {parent_id}",
        parent_session=parent_id,
        parent_transcript=parent_transcript,
        depth=spec.depth,
    )


def _inherited_limits(parent: Agent | None) -> dict[str, int]:
    """A sub-agent's own sub-agents keep the limits its parent was given."""
    above = parent.toolbox.services.get("subagents") if parent is not None else None
    if not isinstance(above, SubAgents):
        return {}
    return {
        "max_depth": above.max_depth,
        "max_concurrent": above.max_concurrent,
        "answer_limit": above.answer_limit,
    }


def _child(
    parent: Agent,
    spec: ChildSpec,
    *,
    settings: AgentSettings,
    context: ContextSettings,
    tools: list[str] | None,
    plugins: PluginHost,
) -> Agent:
    """A sub-agent of `parent`: same runtime and plugins, its own provider and session."""
    return build_agent(
        parent.runtime.project_root,
        provider=Provider(
            routes_for(parent.provider.routes, spec.model), retry=parent.provider.retry
        ),
        runtime=parent.runtime,
        settings=settings,
        context=context,
        tool_packages=tools,
        plugins=plugins,
        parent=parent,
        spec=spec,
    )


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
    plugins: PluginHost | None = None,
    parent: Agent | None = None,
    spec: ChildSpec | None = None,
    tool_sources: list[ToolSource] | None = None,
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
    driven by a program changes nothing unless its policy allows it.
    `plugins` defaults to the installed and project-local ones
    (`liveforge.declarations.plugins`); their load problems are in
    `agent.session.live.plugin_problems`. `parent` and `spec` build a sub-agent
    (`liveforge.declarations.subagents`): its session is linked to the parent's, and it
    shares the parent's runtime, tool settings, policy and approver (never a tool the
    parent's profile or deny lists leave out).
    `tool_settings` (default: the project's `[tool.liveforge.tools]`) choose the session's
    tool profile. `tool_sources` (default: the MCP servers of the project's `.mcp.json` and
    the user's settings, `mcp_servers`) add tools from outside Python; they are started at
    the first listing of tools and stopped by `Agent.aclose`; a sub-agent uses its parent's.
    """
    from liveforge.config import build_provider, load_config

    root = Path(project_root).resolve()
    config = load_config(root, env)  # the check boundary's settings come from it too
    policy = policy or config.permissions.policy()
    tool_settings = tool_settings or config.tools
    if provider is None:
        provider = build_provider(config, env)
        settings = settings or config.agent_settings()
        context = context or config.context
    settings = settings or AgentSettings()
    context = context or ContextSettings()
    runtime = runtime or Runtime(
        project_root=root,
        check_settings=config.sandbox.settings(root),
        allow_paths=config.allow_paths,
        outside_project=config.outside_project,
    )
    secrets = known_secrets(provider, env)  # registered: tool results and sandbox runs too
    session = (
        Session.open(root, resume, secrets=secrets)
        if resume
        else Session.create(root, secrets=secrets)
    )
    if resume:
        with holding(runtime, lane_of(session)):  # other sessions may be patching meanwhile
            session.restore(runtime, settings.self_packages)
    runtime.protect(_DECLARATIONS)
    if parent is not None and spec is not None:
        link_session(
            session, parent.session.id, str(parent.session.path), spec, lane=lane_of(parent.session)
        )
    plugins = plugins if plugins is not None else PluginHost().load(root)
    toolbox = Toolbox(
        runtime=runtime,
        packages=list(tool_packages or []),
        modules=_plugin_tool_modules(plugins),
        only=child_tools(parent, spec.profile) if parent and spec else None,
        limit=context.tool_result_limit,
        policy=parent.toolbox.policy if parent is not None else policy,
        approver=parent.toolbox.approver if parent is not None else approver,
        settings=parent.toolbox.settings if parent is not None else tool_settings,
        sources=list(parent.toolbox.sources) if parent is not None else [],
    )
    if parent is None:
        toolbox.sources += mcp_servers(root, env) if tool_sources is None else tool_sources
    agent = Agent(
        runtime=runtime,
        provider=provider,
        toolbox=toolbox,
        session=session,
        compactor=Compactor(settings=context),
        prompt=SystemPrompt(runtime=runtime, toolbox=toolbox),
        settings=settings,
    )
    attach(agent, plugins)
    build = functools.partial(
        _child, agent, settings=settings, context=context, tools=tool_packages, plugins=plugins
    )
    toolbox.services["transcript"] = session  # permission questions and their answers
    toolbox.services["file_reads"] = {}  # what the file tools read: stale edits are refused
    toolbox.services["subagents"] = SubAgents(
        agent, build, depth=spec.depth if spec else 0, **_inherited_limits(parent)
    )
    # the rollback tool's default: this session's newest change, never another session's
    toolbox.services["own_changes"] = lambda: changes_of(runtime, lane_of(session), shared=True)
    session.live.plugin_problems = list(plugins.problems)
    plugins.call("on_session_start", session=session)
    plugins.call("before_agent_start", agent=agent)
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


def mcp_servers(root: str | Path, env: Mapping[str, str] | None = None) -> list[ToolSource]:
    """The project's MCP servers (`.mcp.json`, then the user's `mcp.json`), not started yet;
    empty when none is configured."""
    servers = McpServers(load_mcp_config(root, env), project_root=root)
    return [servers] if servers else []


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
