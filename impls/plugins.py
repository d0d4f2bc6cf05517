"""`PluginHost` bodies, and the agent's calls into the hooks.

Calls go implementation by implementation, in pluggy's order (last registered first,
`tryfirst` / `trylast` respected), each in its own try: pluggy's own call loop would let one
raising plugin stop the others and the turn. Wrappers (`wrapper=True`, `hookwrapper=True`)
cannot be isolated that way: a plugin with one is refused, with a problem naming it. A
function marked as a hook that no specification knows is kept but reported.

The agent finds its host with `host_of(agent)`; the `agent_*` functions below are the small
calls the loop makes at its hook points, and do nothing for an agent without plugins.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import forwardpy
import pluggy

from liveforge.declarations.agent import Notice
from liveforge.declarations.messages import ModelRequest, ModelResponse
from liveforge.declarations.plugins import (
    ENTRY_POINT_GROUP,
    HookFailure,
    PluginHost,
    ToolVeto,
)

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = [
    "agent_after_response",
    "agent_after_tool",
    "agent_before_request",
    "agent_before_tool",
    "agent_compacted",
    "attach",
    "end_session",
    "host_of",
    "notices",
]

_ATTRIBUTE = "_plugin_host"


def _project_module(path: Path) -> ModuleType:
    name = f"liveforge_project_plugins.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


_installed: tuple[tuple[tuple[str, int], ...], list[importlib.metadata.EntryPoint]] = ((), [])


def _installed_plugins() -> list[importlib.metadata.EntryPoint]:
    """The installed plugins' entry points, read again only when a folder on `sys.path`
    changed since (a package was installed or removed there) or the path did: reading
    every installed distribution's metadata costs milliseconds per agent built, and a
    gateway builds one per session."""
    global _installed
    key = tuple((entry, _mtime(entry)) for entry in sys.path)
    if _installed[0] != key or not key:
        found = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
        _installed = (key, found)
    return _installed[1]


def _mtime(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return -1


@forwardpy.impl(PluginHost.load)
def load(self: PluginHost, project_root: str | Path | None = None) -> PluginHost:
    for entry in _installed_plugins():
        try:
            plugin = entry.load()
        except Exception as exc:
            self.problems.append(f"plugin {entry.name!r} ({entry.value}) cannot load: {exc!r}")
            continue
        self.register(plugin, entry.name)
    folder = Path(project_root) / ".liveforge" / "plugins" if project_root else None
    for path in sorted(folder.glob("*.py")) if folder and folder.is_dir() else []:
        if path.name.startswith("_"):
            continue
        try:
            module = _project_module(path)
        except Exception as exc:
            self.problems.append(f"project plugin {path} cannot load: {exc!r}")
            continue
        self.register(module, f"project:{path.stem}")
    return self


@forwardpy.impl(PluginHost.register)
def register(self: PluginHost, plugin: object, name: str) -> None:
    if self.manager.has_plugin(name):
        self.problems.append(f"plugin {name!r} is registered already; the second one is skipped")
        return
    try:
        self.manager.register(plugin, name=name)
    except (pluggy.PluginValidationError, ValueError) as exc:
        self.problems.append(f"plugin {name!r} rejected: {exc}")
        return
    wrappers, unknown = [], []
    for caller in self.manager.get_hookcallers(plugin) or []:
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            if impl.wrapper or impl.hookwrapper:
                wrappers.append(caller.name)
            elif caller.spec is None and not impl.optionalhook:
                unknown.append(caller.name)
    if unknown:
        self.problems.append(
            f"plugin {name!r}: {', '.join(unknown)} is not a liveforge hook and is never "
            "called (see liveforge.declarations.plugins.HookSpecs)"
        )
    if wrappers:
        self.manager.unregister(plugin)
        self.problems.append(
            f"plugin {name!r} rejected: {', '.join(wrappers)} is a hook wrapper; liveforge "
            "calls each hook implementation on its own, so write plain hooks"
        )


@forwardpy.impl(PluginHost.call)
def call(self: PluginHost, hook: str, **kwargs: Any) -> list[Any]:
    caller = getattr(self.manager.hook, hook)
    first = bool(caller.spec and caller.spec.opts.get("firstresult"))
    results: list[Any] = []
    for impl in reversed(caller.get_hookimpls()):
        try:
            value = impl.function(*[kwargs[arg] for arg in impl.argnames])
        except Exception as exc:
            failure = HookFailure(impl.plugin_name, hook, f"{type(exc).__name__}: {exc}")
            self.failures.append(failure)
            continue
        if value is not None:
            results.append(value)
            if first:
                break
    return results


@forwardpy.impl(PluginHost.take_failures)
def take_failures(self: PluginHost) -> list[HookFailure]:
    taken, self.failures = self.failures, []
    return taken


@forwardpy.impl(PluginHost.names)
def names(self: PluginHost) -> list[str]:
    return [name for name, _ in self.manager.list_name_plugin()]


def attach(agent: Agent, host: PluginHost) -> None:
    """Give `agent` its plugins (`build_agent` does this)."""
    agent.__dict__[_ATTRIBUTE] = host


def host_of(agent: Agent) -> PluginHost | None:
    """The agent's plugins, or None when it has none."""
    host: PluginHost | None = agent.__dict__.get(_ATTRIBUTE)
    return host


def notices(agent: Agent) -> list[Notice]:
    """A notice for every hook that raised since the last look."""
    host = host_of(agent)
    failures = host.take_failures() if host is not None else []
    return [Notice(kind="plugin", text=f.describe()) for f in failures]


def agent_before_request(agent: Agent, request: ModelRequest) -> ModelRequest:
    """`before_model_request`, then `model_override`, applied to `request`."""
    host = host_of(agent)
    if host is None:
        return request
    for replaced in host.call("before_model_request", request=request):
        if isinstance(replaced, ModelRequest):
            request = replaced
    override = host.call("model_override", request=request)
    if override and isinstance(override[0], str):
        request = request.model_copy(update={"model": override[0]})
    return request


def agent_after_response(agent: Agent, response: ModelResponse) -> None:
    """`after_model_response`."""
    host = host_of(agent)
    if host is not None:
        host.call("after_model_response", response=response)


def agent_before_tool(
    agent: Agent, name: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], ToolVeto | None]:
    """`before_tool_call`: (the arguments to use, the first veto or None)."""
    host = host_of(agent)
    if host is None:
        return arguments, None
    for answer in host.call("before_tool_call", name=name, arguments=dict(arguments)):
        if isinstance(answer, ToolVeto):
            return arguments, answer
        if isinstance(answer, dict):
            arguments = answer
    return arguments, None


def agent_after_tool(
    agent: Agent, name: str, arguments: dict[str, Any], result: str, is_error: bool
) -> None:
    """`after_tool_call`."""
    host = host_of(agent)
    if host is not None:
        host.call(
            "after_tool_call", name=name, arguments=arguments, result=result, is_error=is_error
        )


def agent_compacted(agent: Agent, summary: str, tokens_before: int, tokens_after: int) -> None:
    """`on_compaction`."""
    host = host_of(agent)
    if host is not None:
        host.call(
            "on_compaction",
            summary=summary,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
        )


def end_session(agent: Agent) -> None:
    """`on_session_end`: the front end is done with the agent's session."""
    host = host_of(agent)
    if host is not None:
        host.call("on_session_end", session=agent.session)
