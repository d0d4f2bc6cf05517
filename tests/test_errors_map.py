"""liveforge.errors maps the whole exception tree, completely and truly."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import liveforge
import liveforge.errors as errors

_LINE = re.compile(r"^(?P<indent> *)\* (?P<name>\w+)(?: \[(?P<builtins>[\w, ]+)\])?")


def _defined_errors() -> set[type]:
    """Every LiveforgeError subclass defined in a liveforge module."""
    found: set[type] = set()
    for info in pkgutil.walk_packages(liveforge.__path__, "liveforge."):
        if ".demo.sample" in info.name:
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, errors.LiveforgeError)
                and value.__module__ == module.__name__
            ):
                found.add(value)
    return found


def _tree() -> dict[str, tuple[str | None, set[str]]]:
    """name -> (parent in the docstring tree, builtins named in brackets)."""
    stack: list[str] = []
    tree: dict[str, tuple[str | None, set[str]]] = {}
    for line in (errors.__doc__ or "").splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        depth = len(match["indent"]) // 2
        del stack[depth:]
        parent = stack[-1] if stack else None
        builtins = {b.strip() for b in (match["builtins"] or "").split(",") if b.strip()}
        tree[match["name"]] = (parent, builtins)
        stack.append(match["name"])
    return tree


def test_every_liveforge_error_is_exported_by_the_map():
    """A new error class anywhere in liveforge must be added to liveforge.errors."""
    exported = {getattr(errors, name) for name in errors.__all__}
    missing = sorted(c.__qualname__ for c in _defined_errors() - exported)
    assert missing == []


def test_the_docstring_tree_shows_each_error_under_its_real_base():
    """Each exported error appears once in the tree, under its liveforge base, with the
    builtins it also subclasses."""
    tree = _tree()
    exported = [n for n in errors.__all__ if n != "ExitCode"]
    assert sorted(tree) == sorted(exported)
    for name in exported:
        cls = getattr(errors, name)
        bases = [b for b in cls.__bases__ if issubclass(b, errors.LiveforgeError)]
        builtins = {b.__name__ for b in cls.__bases__ if b.__module__ == "builtins"} - {"Exception"}
        parent, listed = tree[name]
        assert parent == (bases[0].__name__ if bases else None), name
        assert listed == builtins, name
