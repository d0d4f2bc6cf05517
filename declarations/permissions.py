"""The permission policy: one answer, for every front end, to "may this tool call run?".

Every tool declares its *effect* — what it can do to the world — with `effect(...)`; the
policy maps (mode, effect, per-tool rules) to a `Decision`: run it, ask the person first, or
refuse. The modes are the ones users of agent CLIs know:

    mode        read  memory  check  write  execute  shell  unbounded
    read-only   allow deny    allow  deny   deny     deny   deny
    ask         allow ask     allow  ask    ask      ask    ask
    auto-edit   allow allow   allow  ask    ask      ask    ask
    full-auto   allow allow   allow  allow  allow    allow  ask

`read` looks at the program or files; `memory` changes the running program in memory only
(patch, reload, rollback: undoable, nothing on disk, but the module's code runs in the live
process); `check` runs code inside the check boundary (verify, run_tests); `write` changes
files; `execute` runs code in the live process; `shell` runs a shell command inside the
check boundary (it writes the project); `unbounded` runs one outside it, as a terminal
would (every file, the network, the secrets), which no mode allows without asking.
A tool may declare calls with a milder or a stricter effect (`effect`'s ``lighter`` and
``stricter``: polling a background process only reads, a command with ``boundary=False`` is
unbounded). Per-tool rules (`Rules`) override the table: ``deny`` always wins, then
``allow``, then ``ask``. An unbounded call goes by the rules naming ``"unbounded"``, not by
its tool's own ``allow`` or ``ask`` (a tool's ``deny`` still refuses it): letting the agent
run commands outside the boundary unasked takes ``allow = ["unbounded"]``.

    policy = Policy(mode="ask", rules=Rules(deny=("execute",)))
    policy.decide("persist", "write")     # Decision.ASK
    policy.decide("execute", "execute")   # Decision.DENY
    Policy(mode="full-auto").decide("exec", "unbounded")   # Decision.ASK

Who answers an `ASK` is the front end's `Approver`: it gets an `ApprovalRequest` (the tool,
its effect, its arguments and a preview of what will happen) and says yes or no. Work a
person started themselves (a slash command, a confirmed `/persist`) runs inside
`approved()`, where nothing asks again.
"""

from __future__ import annotations

import contextlib
import enum
import fnmatch
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, get_args

from liveforge.kernel.errors import LiveforgeError

__all__ = [
    "MODES",
    "UNBOUNDED",
    "ApprovalRequest",
    "Approver",
    "CallEffects",
    "Decision",
    "Effect",
    "Mode",
    "PermissionDenied",
    "Policy",
    "Rules",
    "approved",
    "effect",
    "effect_of",
    "is_approved",
]

Mode = Literal["read-only", "ask", "auto-edit", "full-auto"]
Effect = Literal["read", "memory", "check", "write", "execute", "shell", "unbounded"]
MODES: tuple[Mode, ...] = get_args(Mode)
UNBOUNDED: Effect = "unbounded"
"""The effect of a shell command outside the check boundary, and the rule name that lets
such commands run unasked (``allow = ["unbounded"]``) or refuses them (``deny``)."""
F = TypeVar("F", bound=Callable[..., object])
_ATTRIBUTE = "__liveforge_effect__"
_BY_CALL = "__liveforge_call_effects__"


class Decision(enum.Enum):
    """What the policy says about one tool call."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class PermissionDenied(LiveforgeError, PermissionError):
    """A tool call the permission mode or a rule refuses; the message says how to allow it."""

    def __init__(self, message: str, *, tool: str = "", mode: str = "") -> None:
        super().__init__(message)
        self.tool = tool
        self.mode = mode


_TABLE: dict[Mode, dict[Effect, Decision]] = {
    "read-only": {"read": Decision.ALLOW, "check": Decision.ALLOW},
    "ask": {"read": Decision.ALLOW, "check": Decision.ALLOW},
    "auto-edit": {"read": Decision.ALLOW, "memory": Decision.ALLOW, "check": Decision.ALLOW},
    # outside the check boundary is a person's decision in every mode, unless a rule allows it
    "full-auto": {e: Decision.ALLOW if e != UNBOUNDED else Decision.ASK for e in get_args(Effect)},
}
_UNLISTED: dict[Mode, Decision] = {
    "read-only": Decision.DENY,
    "ask": Decision.ASK,
    "auto-edit": Decision.ASK,
    "full-auto": Decision.ALLOW,
}


@dataclass(frozen=True)
class Rules:
    """Per-tool overrides by tool name: ``deny`` wins over ``allow``, ``allow`` over ``ask``.
    The name ``"unbounded"`` (`UNBOUNDED`) stands for shell commands outside the check
    boundary, whichever tool runs them. A name with ``*`` is a pattern (``mcp__github__*``)."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def names(self, kind: Literal["allow", "ask", "deny"], tool: str) -> bool:
        """True when the `kind` list names `tool`, exactly or by a pattern with ``*``
        (``mcp__github__*``: every tool of the MCP server ``github``)."""
        return any(
            tool == name or ("*" in name and fnmatch.fnmatchcase(tool, name))
            for name in getattr(self, kind)
        )


@dataclass(frozen=True)
class Policy:
    """A permission mode plus per-tool rules; `decide` is the one place that answers."""

    mode: Mode = "ask"
    rules: Rules = Rules()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(
                f"unknown permission mode {self.mode!r}; choose one of {', '.join(MODES)}"
            )

    def decide(self, tool: str, effect: Effect) -> Decision:
        """Allow, ask or deny a call of `tool`, whose effect is `effect`."""
        if self.rules.names("deny", tool):
            return Decision.DENY
        name = UNBOUNDED if effect == UNBOUNDED else tool
        if self.rules.names("deny", name):
            return Decision.DENY
        if self.rules.names("allow", name):
            return Decision.ALLOW
        if self.rules.names("ask", name):
            return Decision.ASK
        return _TABLE[self.mode].get(effect, _UNLISTED[self.mode])


CallEffects = dict[str, dict[Any, Effect]]
"""Effects of some calls of a tool, by the value of one argument: ``{"action": {"poll":
"read"}}``."""


def effect(
    kind: Effect, *, lighter: CallEffects | None = None, stricter: CallEffects | None = None
) -> Callable[[F], F]:
    """Mark a tool function with its effect (only marks; the policy decides).

    `lighter` names calls whose effect is milder, by the value of one argument: a tool
    whose ``action`` may be ``"poll"`` or ``"start"`` says
    ``effect("shell", lighter={"action": {"poll": "read"}})``. The tool's own effect (what
    MCP annotations and profiles go by) stays ``kind``. `stricter` names calls whose effect
    is stricter than ``kind`` the same way (``stricter={"boundary": {False: "unbounded"}}``);
    a call `lighter` names is never made stricter."""
    tables = [*(lighter or {}).values(), *(stricter or {}).values()]
    for name in (kind, *(e for table in tables for e in table.values())):
        if name not in get_args(Effect):
            raise ValueError(f"unknown tool effect {name!r}; choose one of {get_args(Effect)}")

    def mark(func: F) -> F:
        setattr(func, _ATTRIBUTE, kind)
        setattr(func, _BY_CALL, [dict(lighter or {}), dict(stricter or {})])
        return func

    return mark


def effect_of(func: Callable[..., object], arguments: Mapping[str, Any] | None = None) -> Effect:
    """The declared effect of a tool, or of one call of it when `arguments` are given (see
    `effect`'s `lighter` and `stricter`); an unmarked tool counts as ``execute`` (the
    strictest effect short of a shell), so a new tool is asked about until it says what it
    does."""
    kind: Effect = getattr(func, _ATTRIBUTE, "execute")
    if arguments is None:
        return kind
    for tables in getattr(func, _BY_CALL, []):
        for argument, table in tables.items():
            value = arguments.get(argument)
            if isinstance(value, (str, bool)) and value in table:
                return table[value]
    return kind


@dataclass(frozen=True)
class ApprovalRequest:
    """One question for a person: may `tool` run with `arguments`? `preview` shows what
    will happen (a diff, the code to run, the files to write)."""

    tool: str
    effect: Effect
    arguments: dict[str, Any] = field(default_factory=dict)
    preview: str = ""


Approver = Callable[[ApprovalRequest], bool]
"""A front end's answer to an `ASK`: True runs the call, False refuses it."""

_approved: ContextVar[bool] = ContextVar("liveforge_approved", default=False)


@contextlib.contextmanager
def approved() -> Iterator[None]:
    """Everything inside this block was approved already: no policy question is asked."""
    token = _approved.set(True)
    try:
        yield
    finally:
        _approved.reset(token)


def is_approved() -> bool:
    """True inside `approved()` (in this thread, or a task or thread that copied its context)."""
    return _approved.get()
