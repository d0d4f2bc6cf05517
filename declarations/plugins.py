# mypy: disable-error-code="empty-body"
"""Plugins: code outside liveforge that adds tools and CLI commands and hooks the agent.

Hooks are pluggy hooks (pytest's plugin library): `HookSpecs` below is the specification,
a plugin marks its functions with `hookimpl` (names must match; pluggy checks signatures and
reports a misnamed hook). A plugin is a module or an object, found two ways:

    entry points   group "liveforge.plugins" of any installed distribution:
                   [project.entry-points."liveforge.plugins"]  myplugin = "myplugin.hooks"
    project-local  every `*.py` in the project's `.liveforge/plugins/`

A hook that raises is reported (a `Notice` in the turn, and `PluginHost.failures`) and the
other plugins and the turn go on without it. Hooks that may change what happens:

    before_model_request   return a ModelRequest to send instead (the last one returned wins)
    model_override         return a model name for this request (the first answer wins)
    before_tool_call       return a ToolVeto to refuse the call (its reason goes to the model),
                           or a dict of replacement arguments

Example plugin::

    from liveforge.declarations.plugins import ToolVeto, hookimpl

    @hookimpl
    def before_tool_call(name, arguments):
        if name == "execute" and "rm -rf" in arguments.get("code", ""):
            return ToolVeto("not on this machine")

    @hookimpl
    def liveforge_tool_modules():
        return ["myplugin.tools"]          # a tool module, as in liveforge.tools
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import forwardpy
import pluggy

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent
    from liveforge.declarations.messages import ModelRequest, ModelResponse
    from liveforge.declarations.session import Session

__all__ = [
    "ENTRY_POINT_GROUP",
    "HookFailure",
    "HookSpecs",
    "PluginHost",
    "ToolVeto",
    "hookimpl",
    "hookspec",
]

ENTRY_POINT_GROUP = "liveforge.plugins"
hookspec = pluggy.HookspecMarker("liveforge")
hookimpl = pluggy.HookimplMarker("liveforge")


@dataclass(frozen=True)
class ToolVeto:
    """Returned by `before_tool_call` to refuse a call; `reason` is shown to the model."""

    reason: str


@dataclass(frozen=True)
class HookFailure:
    """A hook implementation that raised: which plugin, which hook, what it raised."""

    plugin: str
    hook: str
    error: str

    def describe(self) -> str:
        """One line for people and models."""
        return f"plugin {self.plugin!r} failed in {self.hook}: {self.error} (skipped)"


class HookSpecs:
    """The hooks a plugin may implement (every argument is optional to accept)."""

    @hookspec
    def before_agent_start(self, agent: Agent) -> None:
        """The agent was built and has not run a turn yet."""

    @hookspec
    def on_session_start(self, session: Session) -> None:
        """A session was created or resumed."""

    @hookspec
    def on_session_end(self, session: Session) -> None:
        """The front end is done with the session (chat left, `run` finished)."""

    @hookspec
    def before_model_request(self, request: ModelRequest) -> ModelRequest | None:
        """About to call the model; return a replacement request, or None."""

    @hookspec(firstresult=True)
    def model_override(self, request: ModelRequest) -> str | None:
        """Return a model name to use for this request instead of the route's, or None."""

    @hookspec
    def after_model_response(self, response: ModelResponse) -> None:
        """The model's answer arrived (whole, before its tool calls run)."""

    @hookspec
    def before_tool_call(self, name: str, arguments: dict[str, Any]) -> ToolVeto | dict | None:
        """About to run a tool: return ToolVeto to refuse it, new arguments, or None."""

    @hookspec
    def after_tool_call(
        self, name: str, arguments: dict[str, Any], result: str, is_error: bool
    ) -> None:
        """A tool call finished with `result` (the text the model will read)."""

    @hookspec
    def on_compaction(self, summary: str, tokens_before: int, tokens_after: int) -> None:
        """Older turns were summarised into `summary`."""

    @hookspec
    def liveforge_tool_modules(self) -> list[str]:
        """Dotted names of tool modules to add to the agent's tools."""

    @hookspec
    def liveforge_cli(self, commands: argparse._SubParsersAction) -> None:
        """Add sub-commands to `liveforge` (set `handler=` on the parser, as built-ins do)."""


class PluginHost(forwardpy.Object):
    """The plugins of one process or project, and isolated calls of their hooks.

    `failures` collects every hook that raised, oldest first; `take_failures()` hands them
    to whoever reports them (the agent turns them into notices).
    """

    manager: pluggy.PluginManager
    failures: list[HookFailure]
    problems: list[str]

    def __init__(self) -> None:
        self.manager = pluggy.PluginManager("liveforge")
        self.manager.add_hookspecs(HookSpecs)
        self.failures = []
        self.problems = []

    def load(self, project_root: str | Path | None = None) -> PluginHost:
        """Register the entry-point plugins, and the project's local ones when given a
        root; a plugin that cannot load goes to `problems`. Returns self."""
        ...

    def register(self, plugin: object, name: str) -> None:
        """Register one plugin object or module under `name` (pluggy validates it)."""
        ...

    def call(self, hook: str, **kwargs: Any) -> list[Any]:
        """Call every implementation of `hook`, each isolated; their non-None results."""
        ...

    def take_failures(self) -> list[HookFailure]:
        """The failures since the last take, oldest first (and forget them)."""
        ...

    def names(self) -> list[str]:
        """Registered plugin names, in registration order."""
        ...
