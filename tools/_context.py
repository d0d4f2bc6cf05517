"""How a tool reaches the runtime it works on: the runtime of the current tool call.

Tools stay plain typed callables whose schemas show only what the model passes; the runtime
is not a parameter. The toolbox binds it for the duration of a call (a context variable, so
threads and asyncio tasks each see their own), and a tool asks for it with ``runtime()``:

    from liveforge.tools import runtime

    def count_changes() -> str:
        '''How many changes this session made.'''
        return str(len(runtime().history()))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from liveforge.declarations.tool_settings import ToolSettings
from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__ = ["NoRuntime", "runtime", "service", "settings", "using_runtime", "using_services"]

_current: ContextVar[Runtime | None] = ContextVar("liveforge_tool_runtime", default=None)
_settings: ContextVar[ToolSettings | None] = ContextVar("liveforge_tool_settings", default=None)
_services: ContextVar[Mapping[str, object] | None] = ContextVar(
    "liveforge_tool_services", default=None
)


class NoRuntime(LiveforgeError, RuntimeError):
    """A tool was called outside a toolbox call, so there is no runtime to work on."""

    def __init__(self) -> None:
        super().__init__(
            "no liveforge runtime is bound: call tools through a Toolbox, or bind one with "
            "`with liveforge.tools.using_runtime(rt): ...`."
        )


def runtime() -> Runtime:
    """The runtime of the current tool call; raises NoRuntime outside one."""
    current = _current.get()
    if current is None:
        raise NoRuntime()
    return current


def settings() -> ToolSettings:
    """The tool settings of the current tool call (the toolbox's), else the defaults."""
    return _settings.get() or ToolSettings()


@contextmanager
def using_runtime(rt: Runtime, tool_settings: ToolSettings | None = None) -> Iterator[Runtime]:
    """Bind ``rt`` as the runtime tools work on (and ``tool_settings`` as their settings),
    for the duration of the ``with`` block."""
    token = _current.set(rt)
    settings_token = _settings.set(tool_settings)
    try:
        yield rt
    finally:
        _settings.reset(settings_token)
        _current.reset(token)


@contextmanager
def using_services(services: Mapping[str, object]) -> Iterator[None]:
    """Bind the agent's services (e.g. its sub-agents) for tools, like `using_runtime`."""
    token = _services.set(services)
    try:
        yield
    finally:
        _services.reset(token)


def service(name: str) -> object | None:
    """The service `name` of the agent whose tool call this is, or None (no such agent)."""
    return (_services.get() or {}).get(name)
