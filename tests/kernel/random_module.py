"""The random side of the random edit test's module model (its items are in
`random_items`): the names a generated module uses, random definitions, random changes of
them, and the sequence that starts from a random module."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from random_items import (
    SLOTTED,
    Alias,
    Assign,
    Cls,
    Data,
    Def,
    Dispatch,
    EnumDef,
    Factory,
    FieldAssign,
    Filler,
    Fixed,
    Item,
    Rebind,
    Tag,
    named,
)

FUNCS = [f"f{i}" for i in range(7)]
#: the function a click command may be made of (no other function calls it)
COMMAND = FUNCS[-1]
CACHED = "functools.cached_property"
#: singledispatch functions, their overloads' types, and the names of aliases
DISPATCH = ["d0", "d1"]
OVERLOADS = ["str", "float", "tuple"]
ALIASES = ["al0", "Al1"]
#: which kinds of edits the generator makes besides the first ones (switch one off to tell
#: which kind a divergence comes from)
EDITS = {"dispatch": True, "aliases": True, "wrappers": True, "registries": True}
#: what a later statement may wrap a function in (`f = deco(f)`)
REBINDS = ["deco", "_Twice", "_Func"]
CLASSES = ["Alpha", "Beta", "Gamma", "Delta"]
CONSTS = ["K0", "K1", "K2", "K3"]
METHODS = ["m0", "m1", "m2", "m3", "m4"]
CLASS_CONSTS = ["CK0", "CK1", "CK2"]
INNER = ["Inner", "Sub"]
DATA = ["Data0", "Data1"]
#: a class a later statement binds again from another module when it can (`<mod>_fast`)
LATER = "Epsilon"
FAST = """class Epsilon:
    REG = []

    def m0(self, x):
        return ("fast", x)
"""
#: items at the start that stay there: filler, SCALE (defaults read it), the tag decorator,
#: values computed from SCALE, the callback factory and the callbacks it made at import
FIRST = 8
ENUMS = ["Color", "Shape"]
ENUM_MEMBERS = ["RED", "GREEN", "BLUE", "PINK"]
FIELDS = ["a", "b", "c"]

DERIVED = 'DERIVED = SCALE * 3\nLABEL = f"s{SCALE}"\nPAIR: tuple = (SCALE, min(SCALE, 4))\n'
CALLBACKS = "_CALLBACKS = [make(2), functools.partial(make(3), 5)]\n"


# Terms with code objects of their own (generator, lambda, comprehension): their line numbers
# must move with the function, and the lambda fails for x == 13 inside its own frame.
NESTED = [
    "sum(i for i in range(x))",
    "(lambda v: 100 // (v - 13))(x)",
    "[v * 2 for v in (x, 1)][0]",
]


# -- random definitions ---------------------------------------------------------------------


def function_def(rng: random.Random, name: str) -> Def:
    params = rng.choice(
        [
            "(x)",
            "(x, y=2)",
            "(x, y=SCALE)",
            "(x, *, y=3)",
            "(x, y=1, *rest)",
            "(x: int, y: Root | None = None) -> int",
        ]
    )
    decos = ["", "", "deco", "tag", "_Twice", "_Curry", "_Slot", "_collect"]
    decos.append("functools.lru_cache(maxsize=None)")
    # wrapper objects and registries filled by an object's method (with and without
    # `__conform__`), from the standard library, toolz and click
    if EDITS["wrappers"]:
        decos += ["_Func", "_partial", "toolz.curry", "toolz.memoize"]
    if EDITS["registries"]:
        decos += ["_REG.register", "_CONF.register"]
    if name == COMMAND and EDITS["wrappers"]:  # no other function calls it (not a function)
        decos += ["_cli.command()", f"_cli.command('{name}-{rng.randint(1, 2)}')"]
    # a registry keyed by the decorator's argument (keys of one function only: no clashes)
    decos.append(f"handles('{name}:{rng.randint(1, 3)}')")
    deco = rng.choice(decos)
    return Def(
        name, deco, params, function_expr(rng, name, params), rng.random() < 0.4, rng.random() < 0.3
    )


def function_expr(rng: random.Random, name: str, params: str) -> str:
    terms = [f"x * {rng.randint(1, 9)}"]
    if "y" in params:
        terms.append("y")
    if "rest" in params:
        terms.append("len(rest)")
    lower = FUNCS[: FUNCS.index(name)] if name in FUNCS else []
    extras = ["SCALE", rng.choice(CONSTS), str(rng.randint(0, 50)), rng.choice(NESTED)]
    extras += [f"{f}(x)" if rng.random() < 0.5 else f"{f}(1)[-1]" for f in lower[-2:]]
    terms += rng.sample(extras, k=min(len(extras), rng.randint(0, 2)))
    expr = " + ".join(terms)
    return f"({expr},)" if rng.random() < 0.5 else expr


def method_def(rng: random.Random, name: str) -> Def:
    kind = rng.choice(["", "", "deco", "staticmethod", "classmethod", "property", CACHED])
    if kind == CACHED and rng.random() < 0.5:
        kind = "property"
    first = {"staticmethod": "", "classmethod": "cls, ", "property": "self", CACHED: "self"}.get(
        kind, "self, "
    )
    if kind in ("property", CACHED):
        params, terms = "(self)", ["self.v", "self.BASE", "super().hook(3)"]
    else:
        params = "(" + first + rng.choice(["x", "x, y=BASE", "x, *, y=4"]) + ")"
        terms = [f"x * {rng.randint(1, 9)}"] + (["y"] if "y" in params else [])
        terms += {
            "": ["self.v", "super().hook(x)", "self.BASE", "type(self).CK0"],
            "deco": ["self.v", "self.BASE"],
            "classmethod": ["cls.BASE", "cls.CK1"],
            "staticmethod": ["SCALE"],
        }[kind]
    terms.append(rng.choice(["K1", f"{rng.choice(FUNCS[:-1])}(2)", "1", *NESTED]))
    if kind in ("property", CACHED):
        terms = [t.replace("(x)", "(self.v)") for t in terms]
    expr = " + ".join(rng.sample(terms, k=rng.randint(1, min(3, len(terms)))))
    guard = kind not in ("property", CACHED) and rng.random() < 0.4
    setter = kind == "property" and rng.random() < 0.5
    return Def(name, kind, params, expr, guard, rng.random() < 0.3, setter)


def class_def(rng: random.Random, name: str) -> Cls:
    # REG is class-level state that must survive every edit of the class (never edited).
    members: list[Any] = [Assign("BASE", rng.randint(1, 9)), Fixed("REG = []\n")]
    if name in SLOTTED:
        members.append(Fixed('__slots__ = ("w",)\n'))
    for mname in sorted(rng.sample(METHODS, k=rng.randint(1, 3))):
        members += [Filler("\n"), method_def(rng, mname)]
    if rng.random() < 0.5:
        members.insert(2, Assign(rng.choice(CLASS_CONSTS), rng.randint(10, 99)))
    if rng.random() < 0.5:
        members.insert(2, FieldAssign("FLD", rng.randint(0, 9)))
    if name in CLASSES and rng.random() < 0.3:
        members += [Filler("\n"), class_def(rng, rng.choice(INNER))]
    return Cls(name, members)


def filler(rng: random.Random) -> Filler:
    return Filler(rng.choice(["\n", "\n\n", "\n# a comment\n", "# note\n\n", "\n\n\n"]))


# -- the sequence ---------------------------------------------------------------------------


@dataclass
class Sequence:
    """One random run: the model, how each edit was applied, and what continuity broke."""

    rng: random.Random
    items: list[Item]
    log: list[str] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)
    #: names (and "callbacks") a change's note said keep old objects: not compared.
    noted: set[str] = field(default_factory=set)
    #: the model before each applied change and the change's id, newest last (for rollback).
    undo: list[tuple[list[Item], str]] = field(default_factory=list)
    #: names whose references taken before a change a note said still hold old objects.
    stale: set[str] = field(default_factory=set)
    #: removed functions a change's note said registries still hold.
    kept: set[str] = field(default_factory=set)

    @classmethod
    def start(cls, rng: random.Random) -> Sequence:
        items: list[Item] = [Filler("\n\n"), Assign("SCALE", 3), Tag(1), Filler("\n\n")]
        items += [Fixed(DERIVED), Filler("\n\n"), Factory(1, 2, False, True), Fixed(CALLBACKS)]
        pool = [
            *rng.sample(CONSTS, 2),
            *rng.sample(FUNCS, 3),
            *rng.sample(CLASSES, 2),
            *rng.sample(DATA, 1),
            *rng.sample(ENUMS, 1),
            *rng.sample(DISPATCH, rng.randint(0, 1) if EDITS["dispatch"] else 0),
        ]
        for name in pool:
            items.append(filler(rng) if rng.random() < 0.5 else Filler("\n\n"))
            items.append(make(rng, name))
        items += [Filler("\n\n"), class_def(rng, LATER), Fixed(LATER_BINDING)]
        sequence = cls(rng, items)
        for _ in range(2 if EDITS["aliases"] else 0):  # aliases and wrappings from the start
            sequence.alias_edit()
        return sequence

    def spot(self) -> int:
        """An insertion index after the first items (SCALE and tag, which others use)."""
        return self.rng.randint(FIRST, len(self.items))

    def alias_edit(self) -> str | None:
        """Bind a second name to a definition (`al0 = f2`), point an alias elsewhere, take
        one out, or wrap a function again after its definition (`f2 = deco(f2)`) or stop
        doing so. Returns what was done, or None when nothing fitted."""
        rng, items = self.rng, self.items
        aliases = [i for i in items if isinstance(i, Alias)]
        rebinds = [i for i in items if isinstance(i, Rebind)]
        choice = rng.choice(["alias", "alias", "retarget", "unalias", "rebind", "unrebind"])
        if choice == "alias" and len(aliases) < len(ALIASES):
            name = rng.choice([n for n in ALIASES if n not in named(aliases)])
            at = self.spot()
            targets = targets_before(items, at)
            if not targets:
                return None
            items[at:at] = [Filler("\n"), Alias(name, rng.choice(targets))]
            return f"add alias {name}"
        if choice == "retarget" and aliases:
            alias = rng.choice(aliases)
            alias.target = rng.choice(targets_before(items, items.index(alias)))
            return f"point {alias.name} at {alias.target}"
        if choice == "unalias" and aliases:
            items.remove(rng.choice(aliases))
            return "remove an alias"
        plain = [i for i in items if isinstance(i, Def) and i.name in FUNCS[:-1]]
        free = [d for d in plain if d.name not in {r.target for r in rebinds}]
        if choice == "rebind" and free:
            target = rng.choice(free)
            items.insert(items.index(target) + 1, Rebind(target.name, rng.choice(REBINDS)))
            return f"wrap {target.name} again after its definition"
        if choice == "unrebind" and rebinds:
            items.remove(rng.choice(rebinds))
            return "remove a later wrapping"
        return None


def targets_before(items: list[Item], at: int) -> list[str]:
    """Functions, classes and dispatch functions defined before position `at`."""
    return [
        i.name
        for i in items[:at]
        if isinstance(i, (Def, Cls, Dispatch)) and i.name in FUNCS + CLASSES + DISPATCH
    ]


def repair(items: list[Item]) -> None:
    """Aliases and later wrappings whose definition is gone, or now stands after them (an
    edit removed or moved it), go too: the model stays a module that imports."""
    seen: set[str] = set()
    for item in list(items):
        if isinstance(item, (Alias, Rebind)) and item.target not in seen:
            items.remove(item)
        elif isinstance(item, Rebind) and items[items.index(item) - 1].name != item.target:
            items.remove(item)  # a wrapping stays right after its definition
        elif item.name:
            seen.add(item.name)


LATER_BINDING = f"""

try:
    {LATER} = importlib.import_module(__name__ + "_fast").{LATER}
except ImportError:
    pass
"""


def data_def(rng: random.Random, name: str) -> Data:
    fields = {f: rng.randint(0, 9) for f in FIELDS if rng.random() < 0.7}
    return Data(name, fields, rng.randint(1, 9), rng.random() < 0.4, rng.random() < 0.4)


def enum_def(rng: random.Random, name: str) -> EnumDef:
    names = rng.sample(ENUM_MEMBERS, k=rng.randint(1, len(ENUM_MEMBERS)))
    return EnumDef(name, {m: rng.randint(1, 5) for m in names}, rng.randint(1, 9))


def make(rng: random.Random, name: str) -> Item:
    if name in ENUMS:
        return enum_def(rng, name)
    if name in CONSTS:
        return Assign(name, rng.randint(0, 99))
    if name in DATA:
        return data_def(rng, name)
    if name in FUNCS:
        return function_def(rng, name)
    if name in DISPATCH:
        return dispatch_def(rng, name)
    return class_def(rng, name)


def dispatch_def(rng: random.Random, name: str) -> Dispatch:
    kinds = rng.sample(OVERLOADS, k=rng.randint(0, 2))
    return Dispatch(name, rng.randint(1, 9), {k: rng.randint(1, 9) for k in kinds})


def changed(rng: random.Random, old: Item) -> Item:
    """A changed version of a definition (new value, new class body, or a function with some
    of decorator, parameters, body and extras changed)."""
    if isinstance(old, Assign):
        return type(old)(old.name, old.value + rng.randint(1, 9))
    if isinstance(old, Factory):
        if rng.random() < 0.6:
            return Factory(old.label + 1, old.mult, old.lam, old.uses_k)
        return Factory(old.label + 1, rng.randint(1, 3), rng.random() < 0.3, rng.random() < 0.7)
    if isinstance(old, Tag):
        return Tag(old.label + 1)
    if isinstance(old, Dispatch):
        new_dispatch = dispatch_def(rng, old.name)
        if rng.random() < 0.5:  # only factors change: every overload's body
            return Dispatch(old.name, new_dispatch.factor, dict.fromkeys(old.overloads, 2))
        return new_dispatch
    if isinstance(old, Alias):
        return old  # retargeted by `alias_edit`, which knows what is defined before it
    if isinstance(old, EnumDef):
        new_enum = enum_def(rng, old.name)
        if rng.random() < 0.4:
            new_enum.members = old.members
        return new_enum
    if isinstance(old, Data):
        data = data_def(rng, old.name)
        fields = old.fields if rng.random() < 0.6 else data.fields
        return Data(old.name, fields, data.factor, data.frozen, data.order)
    if isinstance(old, Cls):
        new = class_def(rng, old.name)
        if rng.random() < 0.5 and new.members[-1].name not in named(old.members):
            new.members = [*old.members, Filler("\n"), new.members[-1]]
        return new
    assert isinstance(old, Def)
    fresh = function_def(rng, old.name)
    aspect = rng.choice(["expr", "params", "deco", "extras", "all"])
    return Def(
        old.name,
        fresh.deco if aspect in ("deco", "all") else old.deco,
        fresh.params if aspect in ("params", "all") else old.params,
        fresh.expr if aspect in ("expr", "params", "all") else old.expr,
        fresh.guard if aspect in ("extras", "all") else old.guard,
        fresh.note if aspect in ("extras", "all") else old.note,
    )
