"""The items of the random edit test's module model: definitions that render to source
text (`render`), and what each name is bound to (`identities`). The random ways to make and
change them are in `random_module`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: decorators that make an object of another kind than a function around what they decorate
WRAPPER_OBJECTS = (
    "_Twice",
    "_Curry",
    "_Slot",
    "_Func",
    "_partial",
    "toolz.curry",
    "_cli.command()",
)

#: classes with `__slots__`, and dataclasses with slots=True (their fields cannot change live)
SLOTTED = ["Alpha", "Gamma", "Data0"]

HEADER = """import dataclasses
import enum
import functools
import importlib

import click
import toolz

STATE = {"calls": 0}


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return ("deco", fn(*args, **kwargs))
    return wrapper


class _Twice:
    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return ("twice", self.fn(*args, **kwargs))


class _Curry:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return ("curry", self.fn(*args, **kwargs))


class _Slot:
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return ("slot", self.fn(*args, **kwargs))


class _Func:
    def __init__(self, func):
        self.func = func

    def __call__(self, *args, **kwargs):
        return ("func", self.func(*args, **kwargs))


def _partial(fn):
    return functools.partial(fn)


class _Registry:
    def __init__(self):
        self.entries = []
        self.by_name = {}

    def register(self, fn):
        self.entries.append(fn)
        self.by_name[fn.__name__] = fn
        return fn


class _Conforming:
    def __init__(self):
        self.functions = []

    def register(self, fn):
        self.functions.append(fn)
        fn.__conform__ = lambda new: self.recode(fn, new)
        return fn

    def recode(self, fn, new):
        if new is None:
            self.functions[:] = [f for f in self.functions if f is not fn]
        else:
            fn.__code__, fn.__defaults__ = new.__code__, new.__defaults__
            fn.__kwdefaults__, fn.__annotations__ = new.__kwdefaults__, new.__annotations__


_PLUGINS = {}
_HANDLERS = {}
_COLLECTED = []
_REG = _Registry()
_CONF = _Conforming()
_cli = click.Group()


def _collect(fn):
    _COLLECTED.append(fn)
    return fn


def handles(key):
    def register(fn):
        _HANDLERS[key] = fn
        return fn
    return register


class Field:
    def __init__(self, default=None):
        self.default = default

    def __set_name__(self, owner, name):
        self.owner, self.name = owner, name

    def __get__(self, obj, owner=None):
        return (self.owner.__qualname__, self.owner is owner, self.name, self.default)


class Root:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "." not in cls.__qualname__ and cls.__name__ != "Epsilon":
            _PLUGINS[cls.__name__] = cls

    def __init__(self, v=5):
        self.v = v

    def hook(self, x):
        return x + self.v
"""


@dataclass
class Def:
    """A function or method: decorator, parameters, body expression, optional extras."""

    name: str
    deco: str
    params: str
    expr: str
    guard: bool = False
    note: bool = False
    #: for a property: also a setter (a second statement binding the same name).
    setter: bool = False

    def text(self, indent: str = "") -> str:
        lines = [f"@{self.deco}"] if self.deco else []
        lines.append(f"def {self.name}{self.params}:")
        if self.note:
            lines.append(f"    # {self.name} keeps a note")
        if self.guard:
            lines += ["    if x == 13:", f"        raise ValueError('{self.name} refuses 13')"]
        lines.append(f"    return {self.expr}")
        if self.setter:
            lines += [
                "",
                f"@{self.name}.setter",
                f"def {self.name}(self, value):",
                "    self.v = value * 2",
            ]
        return "".join(f"{indent}{line}\n" if line else "\n" for line in lines)


@dataclass
class Assign:
    """`NAME = value` at module or class level."""

    name: str
    value: int

    def text(self, indent: str = "") -> str:
        return f"{indent}{self.name} = {self.value}\n"


@dataclass
class Tag:
    """The `tag` decorator, whose wrapper's label changes: functions it decorated earlier
    must run the new wrapper."""

    label: int
    name = "tag"

    def text(self, indent: str = "") -> str:
        return (
            "def tag(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n"
            f"        return ('tag{self.label}', fn(*args, **kwargs))\n    return wrapper\n"
        )


@dataclass
class Factory:
    """`make`, which makes the callbacks `_CALLBACKS` holds since import: a label only its
    closure reads (an exact update), a multiplier its own code computes (the callbacks keep
    the old captured value), a lambda or a def, with or without a second free variable."""

    label: int
    mult: int
    lam: bool
    uses_k: bool
    name = "make"

    def text(self, indent: str = "") -> str:
        value = f"('cb{self.label}', x * scaled" + (" + k)" if self.uses_k else ")")
        body = (
            [f"    return lambda x: {value}"]
            if self.lam
            else ["    def cb(x):", f"        return {value}", "    return cb"]
        )
        lines = ["def make(n, k=1):", f"    scaled = n * {self.mult}", *body]
        return "".join(f"{indent}{line}\n" for line in lines)

    def shape(self) -> tuple[int, bool, bool]:
        """What callbacks made earlier cannot follow when it changes."""
        return (self.mult, self.lam, self.uses_k)


@dataclass
class Filler:
    """Blank lines and comments between definitions."""

    raw: str

    name = ""

    def text(self, indent: str = "") -> str:
        return "".join(
            f"{indent}{line}" if line.strip() else line
            for line in self.raw.splitlines(keepends=True)
        )


@dataclass
class Fixed:
    """A statement no edit touches (class-level state that must survive every edit)."""

    raw: str

    name = ""

    def text(self, indent: str = "") -> str:
        return f"{indent}{self.raw}"


class Future(Fixed):
    """`from __future__ import annotations`, rendered at the top wherever the item stands."""

    def __init__(self) -> None:
        super().__init__("")


@dataclass
class Cls:
    """A class deriving from Root; its first member is the constant BASE (never removed)."""

    name: str
    members: list[Any]

    def text(self, indent: str = "") -> str:
        return f"{indent}class {self.name}(Root):\n" + "".join(
            m.text(indent + "    ") for m in self.members
        )


@dataclass
class Data:
    """A dataclass: int fields with defaults, a method reading two of them, parameters."""

    name: str
    fields: dict[str, int]
    factor: int
    frozen: bool = False
    order: bool = False

    def text(self, indent: str = "") -> str:
        params = f"frozen={self.frozen}, order={self.order}, slots={self.name in SLOTTED}"
        lines = [f"@dataclasses.dataclass({params})", f"class {self.name}:"]
        lines += [f"    {f}: int = {v}" for f, v in self.fields.items()] or ["    pass"]
        lines += [
            "",
            "    def total(self, x):",
            f"        return x * {self.factor} + self.a + self.b",
        ]
        return "".join(f"{indent}{line}\n" if line else "\n" for line in lines)


@dataclass
class EnumDef:
    """An enum: members with small int values (equal values make aliases) and a method."""

    name: str
    members: dict[str, int]
    factor: int

    def text(self, indent: str = "") -> str:
        lines = [f"class {self.name}(enum.Enum):"]
        lines += [f"    {m} = {v}" for m, v in self.members.items()]
        lines += [
            "",
            "    def describe(self):",
            f"        return (self.name, self.value * {self.factor})",
        ]
        return "".join(f"{indent}{line}\n" if line else "\n" for line in lines)


@dataclass
class FieldAssign(Assign):
    """`NAME = Field(value)` in a class body: a descriptor with `__set_name__`."""

    def text(self, indent: str = "") -> str:
        return f"{indent}{self.name} = Field({self.value})\n"


@dataclass
class Dispatch:
    """A `functools.singledispatch` function and the overloads registered on it (type name
    -> factor), each a `def _` of its own."""

    name: str
    factor: int
    overloads: dict[str, int]

    def text(self, indent: str = "") -> str:
        lines = ["@functools.singledispatch", f"def {self.name}(x, y=2):"]
        lines.append(f"    return ('base', x * {self.factor} + y)")
        for kind, factor in self.overloads.items():
            lines += ["", "", f"@{self.name}.register", f"def _(x: {kind}, y=2):"]
            lines.append(f"    return ('{kind}', x * {factor}, y)")
        return "".join(f"{indent}{line}\n" if line else "\n" for line in lines)


@dataclass
class Alias:
    """`NAME = TARGET` at module level: a second name for a definition above it."""

    name: str
    target: str

    def text(self, indent: str = "") -> str:
        return f"{indent}{self.name} = {self.target}\n"


@dataclass
class Rebind:
    """`TARGET = WRAP(TARGET)` right after a function's definition: the name is bound again,
    to a wrapper around what the definition made."""

    target: str
    wrap: str
    name = ""

    def text(self, indent: str = "") -> str:
        return f"{indent}{self.target} = {self.wrap}({self.target})\n"


Item = Def | Assign | Filler | Cls | Data | EnumDef | Tag | Factory | Dispatch | Alias | Rebind


FUTURE = "from __future__ import annotations\n"


def render(items: list[Item]) -> str:
    """The module's source text; a `Future` item puts the future import first."""
    future = FUTURE if any(isinstance(item, Future) for item in items) else ""
    return future + HEADER + "".join(item.text() for item in items)


def named(items: list[Any]) -> dict[str, Any]:
    return {item.name: item for item in items if item.name}


def factory_shape(items: list[Item]) -> tuple[int, bool, bool]:
    """The shape of `make` (see `Factory.shape`)."""
    return next(item.shape() for item in items if isinstance(item, Factory))


def identities(items: list[Item]) -> dict[str, str]:
    """What kind of object each name is bound to (changing it breaks captured references)."""
    found: dict[str, str] = {}
    for item in items:
        if isinstance(item, Cls):
            found.update(_class_identities(item, item.name))
        elif isinstance(item, Data):
            found[item.name] = f"dataclass {item.fields}"
        elif isinstance(item, EnumDef):
            found[item.name] = "enum"
            values = list(item.members.values())
            for i, (member, value) in enumerate(item.members.items()):
                found[f"{item.name}.{member}"] = "alias" if value in values[:i] else "member"
        elif isinstance(item, Def) and item.deco in WRAPPER_OBJECTS:
            found[item.name] = item.deco  # a decorator instance, not a function
        elif isinstance(item, Alias):  # pointed elsewhere, it holds another object
            found[item.name] = f"alias of {item.target}: {found.get(item.target)}"
        elif not isinstance(item, (Filler, Rebind)):
            found[item.name] = type(item).__name__
    return found


def _class_identities(cls: Cls, path: str) -> dict[str, str]:
    found = {path: "class"}
    for member in cls.members:
        if isinstance(member, Def):
            special = member.deco in (
                "staticmethod",
                "classmethod",
                "property",
                "functools.cached_property",
            )
            found[f"{path}.{member.name}"] = member.deco if special else "method"
        elif isinstance(member, Cls):
            found.update(_class_identities(member, f"{path}.{member.name}"))
    return found
