"""The names an IPython user namespace took from project modules, kept in step with them.

liveforge updates functions and classes in place, so most names the user took with
`from m import f` keep running the current code by themselves. Where a change binds a
module name to another object — a constant's new value, a decorator that now makes another
kind of object, a module object replaced — the user's copy would keep the old one. As
IPython's `%autoreload 3` does, the user's names follow: a name bound to what a module name
held before the change takes what it holds after (under the same name; an alias only for
objects with an identity of their own, not small values any other name may share), a name
bound to a replaced module takes the new module, and a module the user star-imported
(`from m import *`) gives its new public names to the namespace.
"""

from __future__ import annotations

import os
import re
import sys
import types
from dataclasses import dataclass, field
from typing import Any

_STAR = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\*", re.MULTILINE)
#: values many names share by identity (interned, cached): followed only under their name.
_SHARED = (int, float, str, bytes, bool, type(None), tuple, frozenset)
_MISSING = object()


@dataclass
class Taken:
    """What the user namespace held from project modules just before a change."""

    #: (module, name in it, id of its value, user names bound to that value)
    copies: list[tuple[str, str, int, list[str]]] = field(default_factory=list)
    #: (user name, module name, id of the module object)
    modules: list[tuple[str, str, int]] = field(default_factory=list)
    #: star-imported module -> its public names then
    stars: dict[str, set[str]] = field(default_factory=dict)


class UserNames:
    """One shell's user namespace, following the project modules under `root`."""

    def __init__(self, user_ns: dict[str, Any], root: str) -> None:
        self.user_ns = user_ns
        self.root = root
        self.stars: set[str] = set()

    def noticed(self, cell: str) -> None:
        """A cell ran: remember the modules it star-imported."""
        self.stars.update(_STAR.findall(cell or ""))

    def taken(self) -> Taken:
        """Before a change: which user names hold what project modules hold."""
        users: dict[int, list[str]] = {}
        found = Taken()
        for name, value in list(self.user_ns.items()):
            if name.startswith("_"):
                continue
            if isinstance(value, types.ModuleType):
                found.modules.append((name, value.__name__, id(value)))
            else:
                users.setdefault(id(value), []).append(name)
        for module in self._project_modules():
            for key, value in list(vars(module).items()):
                names = users.get(id(value))
                if names and not key.startswith("__"):
                    found.copies.append((module.__name__, key, id(value), names))
        for star in self.stars:
            starred = sys.modules.get(star)
            if starred is not None:
                found.stars[star] = set(_public(starred))
        return found

    def follow(self, before: Taken) -> list[str]:
        """After a change: the user names that followed it (rebound or added), sorted."""
        changed: set[str] = set()
        for module_name, key, old, names in before.copies:
            module = sys.modules.get(module_name)
            new = vars(module).get(key, _MISSING) if module is not None else _MISSING
            if new is _MISSING or id(new) == old:
                continue
            for name in names:
                value = self.user_ns.get(name, _MISSING)
                if id(value) != old or (name != key and isinstance(value, _SHARED)):
                    continue
                self.user_ns[name] = new
                changed.add(name)
        for name, module_name, old in before.modules:
            now = sys.modules.get(module_name)
            if now is not None and id(now) != old and id(self.user_ns.get(name)) == old:
                self.user_ns[name] = now
                changed.add(name)
        for star, public in before.stars.items():
            module = sys.modules.get(star)
            for key in set(_public(module)) - public if module is not None else ():
                if key not in self.user_ns:
                    self.user_ns[key] = getattr(module, key)
                    changed.add(key)
        return sorted(changed)

    def _project_modules(self) -> list[types.ModuleType]:
        modules = []
        for module in list(sys.modules.values()):
            filename = getattr(module, "__file__", None)
            if isinstance(filename, str) and os.path.realpath(filename).startswith(self.root):
                modules.append(module)
        return modules


def _public(module: types.ModuleType) -> list[str]:
    """The names `from module import *` binds."""
    names = getattr(module, "__all__", None)
    if isinstance(names, (list, tuple)):
        return [n for n in names if isinstance(n, str)]
    return [n for n in vars(module) if not n.startswith("_")]
