"""Default behaviour of the Toolbox: discover tool modules, describe them, dispatch calls.

Discovery is done afresh on every call (schemas are cached per function version), so tool
modules created, changed or emptied in memory take effect at the next call. A call passes
the permission gate (``liveforge.impls.approvals``: the policy, and the approver when the
policy asks), binds the toolbox's runtime for the tools (``liveforge.tools.runtime()``), runs
under a deadline, and turns every failure the model can fix into an ``is_error`` result.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import inspect
import json
import pkgutil
import sys
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import forwardpy

from liveforge.declarations.messages import ToolSpec
from liveforge.declarations.permissions import approved
from liveforge.declarations.tool_schema import ArgumentError, ToolDefinitionError, ToolSchema
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.declarations.toolbox import Tool, Toolbox, ToolResult, ToolSource
from liveforge.impls.approvals import in_tool_call, refusal
from liveforge.impls.tool_profiles import visible_names
from liveforge.kernel.boundary._secrets import Scrubber
from liveforge.kernel.errors import LiveforgeError
from liveforge.kernel.runtime._deadline import DeadlineExceeded, deadline
from liveforge.tools._context import using_runtime, using_services
from liveforge.tools._output import DEFAULT_LIMIT, clip, limited_to

__all__ = ["BUILTIN_PACKAGE", "DEFAULT_TIMEOUT", "project_tool_packages"]

BUILTIN_PACKAGE = "liveforge.tools"
DEFAULT_TIMEOUT = 60.0
"""Seconds a call may take unless the caller says otherwise."""
_TIMEOUT_GRACE = 15.0
"""Extra seconds over a tool's own ``timeout`` argument before the toolbox interrupts it."""

_schemas: weakref.WeakKeyDictionary[Callable[..., Any], tuple[tuple[Any, ...], ToolSchema]]
_schemas = weakref.WeakKeyDictionary()


def project_tool_packages(project_root: str | Path) -> list[str]:
    """Dotted names of the project's own tools packages (``<pkg>/tools`` with an __init__)."""
    root = Path(project_root)
    found = []
    for base in (root, root / "src"):
        for init in sorted(base.glob("*/tools/__init__.py")):
            if (init.parent.parent / "__init__.py").exists():
                found.append(f"{init.parent.parent.name}.tools")
    return found


def _packages(box: Toolbox) -> list[str]:
    if box.packages:
        return list(box.packages)
    root = box.runtime.project_root
    return [BUILTIN_PACKAGE, *project_tool_packages(root)]


def _tool_module_names(package: ModuleType) -> list[str]:
    """Public direct submodules: on disk (pkgutil) and in memory (sys.modules)."""
    prefix = package.__name__ + "."
    names = {prefix + info.name for info in pkgutil.iter_modules(getattr(package, "__path__", []))}
    names.update(
        name
        for name in list(sys.modules)
        if name.startswith(prefix) and "." not in name[len(prefix) :]
    )
    return sorted(name for name in names if not name.rsplit(".", 1)[-1].startswith("_"))


def _schema_for(func: Callable[..., Any], name: str) -> ToolSchema:
    """The function's schema, recomputed only when its code, docs or defaults changed."""
    version = (
        func.__code__,
        func.__doc__,
        func.__defaults__,
        func.__kwdefaults__,
        repr(func.__annotations__),
        name,
    )
    cached = _schemas.get(func)
    if cached is not None and cached[0] == version:
        return cached[1]
    schema = ToolSchema.of(func, name=name)
    _schemas[func] = (version, schema)
    return schema


def _discover(box: Toolbox) -> tuple[list[Tool], list[str]]:
    tools: dict[str, Tool] = {}
    problems: list[str] = []
    for package_name in _packages(box):
        try:
            package = importlib.import_module(package_name)
        except Exception as exc:
            problems.append(f"{package_name}: cannot import the package: {exc!r}")
            continue
        for module_name in _tool_module_names(package):
            _collect(module_name, tools, problems)
    for module_name in getattr(box, "modules", None) or ():
        _collect(module_name, tools, problems)
    for source in getattr(box, "sources", None) or ():
        _collect_source(source, tools, problems)
    only = getattr(box, "only", None)
    if only is not None:
        tools = {name: tool for name, tool in tools.items() if name in only}
    return list(tools.values()), problems


def _collect(module_name: str, tools: dict[str, Tool], problems: list[str]) -> None:
    """Add the tools of one module; record why candidates were left out."""
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except Exception as exc:
        problems.append(f"{module_name}: cannot import: {exc!r}")
        return
    for name in getattr(module, "__all__", ()):
        func = getattr(module, name, None)
        if not inspect.isfunction(func):
            problems.append(f"{module_name}.{name}: listed in __all__ but not a function")
            continue
        if name in tools:
            problems.append(f"{module_name}.{name}: name taken by {tools[name].module}.{name}")
            continue
        try:
            tools[name] = Tool(name, module_name, func, _schema_for(func, name))
        except ToolDefinitionError as exc:
            problems.append(f"{module_name}.{name}: {exc}")


def _collect_source(source: ToolSource, tools: dict[str, Tool], problems: list[str]) -> None:
    """Add the tools of a source (an MCP server's); a name already taken keeps its tool."""
    for tool in source.tools():
        if tool.name in tools:
            problems.append(f"{tool.module}: {tool.name} is taken by {tools[tool.name].module}")
        else:
            tools[tool.name] = tool
    problems.extend(source.problems())


def _settings(box: Toolbox) -> ToolSettings:
    return getattr(box, "settings", None) or ToolSettings()


def _visible(box: Toolbox, found: list[Tool]) -> list[Tool]:
    names = visible_names(_settings(box), [tool.name for tool in found])
    return [tool for tool in found if tool.name in names]


@forwardpy.impl(Toolbox.tools)
def tools(self: Toolbox) -> list[Tool]:
    return _visible(self, _discover(self)[0])


@forwardpy.impl(Toolbox.specs)
def specs(self: Toolbox) -> list[ToolSpec]:
    return [tool.spec() for tool in self.tools()]


@forwardpy.impl(Toolbox.problems)
def problems(self: Toolbox) -> list[str]:
    return _discover(self)[1]


@forwardpy.impl(Toolbox.call)
def call(
    self: Toolbox, name: str, arguments: dict[str, Any] | str, timeout: float | None = None
) -> ToolResult:
    limit = self.limit or DEFAULT_LIMIT
    found = _discover(self)[0]
    available = {tool.name: tool for tool in _visible(self, found)}
    tool = available.get(name)
    if tool is None and any(t.name == name for t in found):
        return ToolResult(_left_out(name, _settings(self)), is_error=True)
    if tool is None:
        return ToolResult(_unknown(name, list(available)), is_error=True)
    try:
        values = tool.schema.validate(_parse_arguments(name, arguments))
    except ArgumentError as exc:
        return ToolResult(str(exc), is_error=True)
    effect = tool.effect_for(values)
    refused = refusal(self, tool.name, effect, values)
    if refused is not None:
        return ToolResult(refused, is_error=True, refused=refused.by)
    seconds = _effective_timeout(timeout, values)
    # an allowed write (persist) is not asked about again by the runtime's persist guard
    writes = approved() if effect == "write" else contextlib.nullcontext()
    with limited_to(limit), in_tool_call(), writes:
        text, is_error = _run(self, tool, values, seconds)
    # no key value reaches the model, a transcript or another agent, in any encoding
    text = Scrubber.current().text(text)
    return ToolResult(_news(self) + clip(text, limit, _more_hint), is_error=is_error)


def _news(box: Toolbox) -> str:
    """A first line telling of files other liveforge processes wrote since the last call."""
    news = getattr(box.runtime, "foreign_writes", None)
    lines = [write.describe() for write in news()] if news is not None else []
    if not lines:
        return ""
    return f"[{'; '.join(lines)}. Reload what you change next from its file.]\n"


def _parse_arguments(name: str, arguments: dict[str, Any] | str) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise ArgumentError(
            f"{name}: arguments are not valid JSON ({exc}); send a JSON object.",
            tool=name,
            problems=["<json>"],
        ) from None


def _effective_timeout(timeout: float | None, values: dict[str, Any]) -> float:
    """The caller's timeout, stretched to cover a tool's own ``timeout`` argument."""
    seconds = DEFAULT_TIMEOUT if timeout is None else timeout
    own = values.get("timeout")
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        seconds = max(seconds, float(own) + _TIMEOUT_GRACE)
    return seconds


def _run(box: Toolbox, tool: Tool, values: dict[str, Any], seconds: float) -> tuple[str, bool]:
    try:
        runtime = using_runtime(box.runtime, _settings(box))
        with runtime, using_services(box.services), deadline(seconds):
            value = tool.func(**values)
    except DeadlineExceeded:
        return (
            f"{tool.name} ran past its {seconds:g} s timeout and was interrupted; "
            "ask for less work or pass a larger timeout."
        ), True
    except LiveforgeError as exc:
        detail = getattr(exc, "diff", "")  # e.g. a persist conflict: what changed on disk
        text = f"{tool.name} failed: {type(exc).__name__}: {exc}"
        return (f"{text}\n{detail}" if isinstance(detail, str) and detail else text), True
    except Exception as exc:
        return f"{tool.name} raised {type(exc).__name__}: {exc}\n{_short_traceback(exc)}", True
    if isinstance(value, ToolResult):  # a source's tool says itself whether it failed
        return value.text, value.is_error
    return (value if isinstance(value, str) else repr(value)), False


def _short_traceback(exc: BaseException) -> str:
    """The innermost frames of a tool's exception, enough to find the faulty line."""
    frames = traceback.extract_tb(exc.__traceback__)[-4:]
    return "".join(traceback.format_list(frames)).rstrip()


def _left_out(name: str, settings: ToolSettings) -> str:
    return (
        f"{name} is not available in this session (tool profile {settings.profile!r}, "
        "allow/deny lists of [tool.liveforge.tools]); do the task with the tools you have, "
        "or tell the user it needs that tool."
    )


def _unknown(name: str, available: list[str]) -> str:
    close = difflib.get_close_matches(name, available, n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return f"no tool named {name!r}.{hint} Available: {', '.join(sorted(available))}."


def _more_hint(line: int) -> str:
    return f"output cut at line {line}; ask again for a narrower part (start/end, path, depth)"
