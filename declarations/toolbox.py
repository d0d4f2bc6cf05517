# mypy: disable-error-code="empty-body"
"""The tool bridge: which tools the model sees now, and dispatching a call to one.

A *tool module* is a public module (name not starting with ``_``) directly inside one of the
toolbox's tool packages — ``liveforge.tools`` and the project's own tools package. Its tools
are the plain functions named in its ``__all__``: the function's name is the tool's name, its
docstring the description (the ``Args:`` section describes the parameters) and its type hints
the JSON schema. Modules without ``__all__`` contribute nothing.

The catalogue is read afresh at every ``tools()``/``specs()``/``call()``: a tool module
created or changed in memory through the runtime is visible at the next call without a
restart, and a tool removed from ``__all__`` (or whose function was deleted) is gone at once.

    toolbox = Toolbox(runtime=rt, packages=["liveforge.tools"], limit=8000)
    specs = toolbox.specs()                        # [ToolSpec(name, description, input_schema)]
    result = toolbox.call("view_source", {"path": "pkg.mod"}, timeout=30)
    result.text, result.is_error
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from liveforge.declarations.contract import Contract, fresh
from liveforge.declarations.messages import ToolResultBlock, ToolSpec
from liveforge.declarations.permissions import Approver, Effect, Policy, effect_of
from liveforge.declarations.tool_schema import ToolSchema
from liveforge.declarations.tool_settings import ToolSettings

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__ = ["Tool", "ToolResult", "ToolSource", "Toolbox"]


@dataclass(frozen=True)
class Tool:
    """One callable tool: where it lives, its function and its derived schema."""

    name: str
    module: str
    func: Callable[..., Any]
    schema: ToolSchema

    @property
    def effect(self) -> Effect:
        """What calling it can do to the world (`liveforge.declarations.permissions`)."""
        return effect_of(self.func)

    def effect_for(self, arguments: dict[str, Any]) -> Effect:
        """The effect of one call with these arguments (milder than `effect` for some)."""
        return effect_of(self.func, arguments)

    def spec(self) -> ToolSpec:
        """The provider-neutral description a model receives."""
        return ToolSpec(
            name=self.name,
            description=self.schema.description,
            input_schema=self.schema.input_schema,
        )


RefusedBy = Literal["approval", "policy", "plugin"]
"""Why a call was not run: "approval" — it needed the user's yes, which was not given (nobody
to ask, declined, the question failed); "policy" — the permission mode or a deny rule forbids
it; "plugin" — a plugin vetoed it."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gave back: bounded text, and whether it is an error report."""

    text: str
    is_error: bool = False
    refused: RefusedBy | None = None
    """Set when the call was not run at all, and by what (see `RefusedBy`)."""

    def to_block(self, tool_use_id: str) -> ToolResultBlock:
        """This result as the answer to the model's tool call ``tool_use_id``."""
        return ToolResultBlock(tool_use_id=tool_use_id, content=self.text, is_error=self.is_error)


@runtime_checkable
class ToolSource(Protocol):
    """Tools that come from outside the tool packages, such as the tools of MCP servers.

    A source's tools are plain `Tool`s: their functions carry an effect (`effect`) and
    return text or a `ToolResult`, so the policy, the profile and the deadline treat them like
    any other tool. `news` returns, once each, what went wrong since it was last asked (a
    server that failed to start, one that died), for the front end to show.
    """

    def start(self) -> None:
        """Start what the tools need (servers), blocking until they are ready or failed;
        nothing after the first time. `tools` starts them too when this was not called."""
        ...

    def tools(self) -> list[Tool]:
        """The source's tools now (starting what it needs on first use)."""
        ...

    def problems(self) -> list[str]:
        """Why some of its tools are missing now, one line each."""
        ...

    def news(self) -> list[str]:
        """Problems not reported yet; each is returned once."""
        ...

    def close(self) -> None:
        """Stop whatever the source started; its tools are gone afterwards."""
        ...


class Toolbox(Contract):
    """Which tools the model sees now, and dispatching its calls.

    ``packages`` are the tool packages scanned, in priority order (a name taken by an
    earlier package hides later ones); ``modules`` (optional) are single tool modules scanned
    after them, e.g. plugins' tools; ``only`` (optional) keeps just the tools it names;
    ``services`` (optional) are bound for the tools during a call
    (``liveforge.tools._context.service``); ``limit`` bounds every result's characters.
    ``policy`` decides which calls run, which ask ``approver`` first and which are refused
    (a toolbox without a policy uses the default, ``ask``; without an approver nobody can
    say yes, so an ``ask`` is refused with a message the model can act on). ``settings``
    chooses the tool profile and allow/deny lists (a tool they leave out is absent from
    ``tools()`` and refused by ``call()``) and configures the tools themselves.
    ``sources`` (optional) add tools from outside Python packages, such as the tools of MCP
    servers (`liveforge.impls.mcp_client`).
    """

    runtime: Runtime
    packages: list[str] = fresh(list)
    """Empty: liveforge's own tools, then each `<package>.tools` of the project."""
    modules: list[str] = fresh(list)
    only: list[str] | None = None
    services: dict[str, object] = fresh(dict)
    limit: int
    policy: Policy = fresh(Policy)
    """The permission mode and rules; the default is ``ask``."""
    approver: Approver | None = None
    """Answers the calls the policy asks about; None: nobody can say yes."""
    settings: ToolSettings = fresh(ToolSettings)
    """The tool profile, allow/deny lists, and the file, shell and memory tools' settings."""
    sources: list[ToolSource] = fresh(list)
    """Tools from outside the packages (MCP servers), after the packages' own; a name the
    packages already use hides a source's tool."""

    def tools(self) -> list[Tool]:
        """The tools visible now (the profile's, allowed, not denied), in package, module
        and ``__all__`` order."""
        ...

    def specs(self) -> list[ToolSpec]:
        """Provider-neutral specs of the tools visible now."""
        ...

    def problems(self) -> list[str]:
        """Why tool candidates were left out (import errors, unusable annotations, clashes)."""
        ...

    def call(
        self, name: str, arguments: dict[str, Any] | str, timeout: float | None = None
    ) -> ToolResult:
        """Validate ``arguments`` (a dict or a JSON object text) and run tool ``name``.

        Never raises for the model's mistakes: unknown tools, bad arguments, errors raised by
        the tool, running past ``timeout`` seconds and calls the policy refuses (or the
        person declines) all come back as ``is_error`` results.
        """
        ...
