"""The random side of the random edit test's module model (its items are in
`random_items`): the names a generated module uses, random definitions, random changes of
them, and the sequence that starts from a random module."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from random_items import (
    SLOTTED,
    Assign,
    Cls,
    Data,
    Def,
    EnumDef,
    Factory,
    FieldAssign,
    Filler,
    Fixed,
    Item,
    Tag,
    named,
)

FUNCS = [f"f{i}" for i in range(7)]
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
    kind = rng.choice(["", "", "deco", "staticmethod", "classmethod", "property"])
    first = {"staticmethod": "", "classmethod": "cls, ", "property": "self"}.get(kind, "self, ")
    if kind == "property":
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
    terms.append(rng.choice(["K1", f"{rng.choice(FUNCS)}(2)", "1", *NESTED]))
    if kind == "property":
        terms = [t.replace("(x)", "(self.v)") for t in terms]
    expr = " + ".join(rng.sample(terms, k=rng.randint(1, min(3, len(terms)))))
    guard = kind != "property" and rng.random() < 0.4
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
    #: the model before each applied change, newest last (for rollback).
    undo: list[list[Item]] = field(default_factory=list)

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
        ]
        for name in pool:
            items.append(filler(rng) if rng.random() < 0.5 else Filler("\n\n"))
            items.append(make(rng, name))
        items += [Filler("\n\n"), class_def(rng, LATER), Fixed(LATER_BINDING)]
        return cls(rng, items)

    def spot(self) -> int:
        """An insertion index after the first items (SCALE and tag, which others use)."""
        return self.rng.randint(FIRST, len(self.items))


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
    return class_def(rng, name)


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
