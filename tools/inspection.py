"""Looking at the live program: a dense module tree, and source with line numbers.

Marks used in the output: ``*`` changed in memory and not yet persisted, ``+`` exists only
in memory, ``~`` not imported yet, ``:N`` the line where a definition starts (ask
``view_source`` for it). A declared forwardpy method shows ``impl module:line`` for its
active body or ``stub``.
"""

from __future__ import annotations

from typing import Any

from liveforge.declarations.permissions import effect
from liveforge.kernel.errors import TargetNotFound
from liveforge.tools._context import runtime
from liveforge.tools._declared import (
    active_impl,
    declared_names,
    impl_location,
    is_active_impl,
    live_attr,
)
from liveforge.tools._modules import (
    ModuleView,
    check_decodable,
    empty_project_note,
    module_view,
    resolve,
    submodules,
    top_level,
)
from liveforge.tools._outline import Entry, changed, find, module_doc, outline, qualnames
from liveforge.tools._output import clip, number_lines, output_limit

__all__ = ["inspect_module", "view_source"]

_LEGEND = "marks: * changed, unpersisted | + memory only | ~ not imported | :N line"
_MAX_NAMES = 8
_MODULE_DOC = 72
_STYLES = {
    "full": "",
    "brief": "names of collapsed modules left out",
    "bare": "submodules of packages listed by name only",
}
"""How collapsed modules are shown, most detailed first; a tree over the limit steps down."""


@effect("read")
def inspect_module(path: str = "", depth: int = 2) -> str:
    """Tree of packages, modules, classes and functions with signatures and line numbers.

    Declared (forwardpy) methods show their active implementation (impl module:line) or
    stub. Marks: * changed in memory, unpersisted; + memory only; ~ not imported; :N line.

    Args:
        path: dotted path of a package, module or class; empty for the project's packages
        depth: levels to expand below path (submodules, then members, then class members)
    """
    rt = runtime()
    view, names = resolve(path, rt) if path else (None, [])
    if view is None and not top_level(rt):
        return empty_project_note(rt) + "\n"
    text = ""
    for level in range(max(depth, 0), -1, -1):  # too long: drop name lists, then a level
        for style in _STYLES:
            text = _tree(rt, view, names, level, style)
            if len(text) <= output_limit():
                return text + _reduced(depth, level, style)
    return clip(text, None, lambda n: "inspect a sub-path for the rest")


def _tree(rt: Any, view: ModuleView | None, names: list[str], depth: int, style: str) -> str:
    if view is None:
        lines = [
            line for name in top_level(rt) for line in _module_lines(name, depth, 0, rt, style)
        ]
    elif names:
        lines = _member_lines(view, names, depth, rt)
    else:
        lines = _module_lines(view.name, depth, 0, rt, style)
    if any(mark in line for line in lines for mark in (" *", " +", " ~")):
        lines.append(_LEGEND)
    return "\n".join(lines) + "\n"


def _reduced(depth: int, level: int, style: str) -> str:
    if level == depth and style == "full":
        return ""
    what = [f"depth {level} instead of {depth}"] if level < depth else []
    what += [_STYLES[style]] if _STYLES[style] else []
    return f"[shortened to fit: {', '.join(what)}; inspect a sub-path for more]\n"


def _module_lines(name: str, depth: int, indent: int, rt: Any, style: str = "full") -> list[str]:
    view = module_view(name, rt)
    if view is None:
        return [f"{'  ' * indent}{name} (not found)"]
    entries = outline(view.source or "")
    children = submodules(view, rt)
    label = name if indent == 0 else name.rsplit(".", 1)[-1]
    head = f"{'  ' * indent}{label}{'/' if view.is_package else ''}{_marks(view)}"
    if depth <= 0:
        head += _module_doc(view)
        members = [e.name for e in entries if e.public]
        undecodable = " (undecodable)" if view.undecodable else ""
        return [head + undecodable + ("" if style == "brief" else _names(children, members))]
    head += _module_doc(view)
    lines = [head]
    if view.undecodable:
        where = f"{view.filename}: {view.undecodable}"
        lines.append(f"{'  ' * (indent + 1)}(undecodable, so not read: {where})")
    elif view.source is None and not view.is_package:
        lines.append(f"{'  ' * (indent + 1)}(no Python source)")
    if style == "bare" and depth == 1 and children:  # collapsed submodules on one line
        lines[0] += " [" + ", ".join(_bare(child, rt) for child in children) + "]"
    else:
        for child in children:
            lines += _module_lines(child, depth - 1, indent + 1, rt, style)
    dirty = changed(entries, outline(view.disk_source or "")) if view.dirty else set()
    context = _Context(view, dirty)
    for entry in entries:
        if entry.public:
            lines += _entry_lines(entry, depth - 1, indent + 1, context)
    return lines


def _bare(name: str, rt: Any) -> str:
    """A submodule as a word: its name, ``/`` for a package, its mark glued on."""
    view = module_view(name, rt)
    if view is None:
        return name.rsplit(".", 1)[-1]
    package = "/" if view.is_package else ""
    return f"{name.rsplit('.', 1)[-1]}{package}{_marks(view).strip()}"


class _Context:
    """What rendering a module's entries needs: the module view and its changed names."""

    def __init__(self, view: ModuleView, dirty: set[str]) -> None:
        self.view = view
        self.dirty = dirty


def _marks(view: ModuleView) -> str:
    if view.virtual:
        return " +"
    if not view.imported:
        return " ~"
    return " *" if view.dirty else ""


def _module_doc(view: ModuleView) -> str:
    doc = module_doc(view.source or "", _MODULE_DOC)
    if doc is None:
        return " (source does not parse)"
    return f" — {doc}" if doc else ""


def _names(submodules: list[str], members: list[str]) -> str:
    """``[every submodule, the first members, +N]`` of a collapsed module or class."""
    names = [name.rsplit(".", 1)[-1] for name in submodules] + members[:_MAX_NAMES]
    more = f", +{len(members) - _MAX_NAMES}" if len(members) > _MAX_NAMES else ""
    return f" [{', '.join(names)}{more}]" if names else ""


def _entry_lines(
    entry: Entry,
    depth: int,
    indent: int,
    ctx: _Context,
    declared: set[str] | None = None,
    owner: Any = None,
) -> list[str]:
    pad = "  " * indent
    text = pad + _describe(entry, ctx, declared or set(), owner)
    if entry.kind != "class":
        return [text]
    cls = live_attr(ctx.view.name, entry.qualname.split("."))
    members = [child for child in entry.children if child.public]
    names = declared_names(cls)
    if depth <= 0:
        return [text + _names([], [_leaf_member(m.name, names, cls) for m in members])]
    return [text] + [
        line
        for child in members
        for line in _entry_lines(child, depth - 1, indent + 1, ctx, names, cls)
    ]


def _leaf_member(name: str, declared: set[str], cls: Any) -> str:
    """A member in a collapsed class: declared stubs say so."""
    return f"{name}(stub)" if name in declared and active_impl(cls, name) is None else name


def _describe(entry: Entry, ctx: _Context, declared: set[str], owner: Any) -> str:
    star = " *" if entry.qualname in ctx.dirty else ""
    if entry.kind == "var":
        return f"{entry.name}{entry.signature}{star}"
    decorators = "".join(f"@{_short(d)} " for d in entry.decorators)
    keyword = "class " if entry.kind == "class" else ("async " if "async" in entry.kind else "")
    text = f"{decorators}{keyword}{entry.name}{entry.signature}{star} :{entry.start}"
    if entry.name in declared and owner is not None:
        text += _impl_note(owner, entry.name, ctx)
    elif entry.kind != "class" and not declared:
        text += _inactive_note(ctx.view.name, entry)
    return text + (f" — {entry.doc}" if entry.doc else "")


def _short(decorator: str) -> str:
    return decorator.removeprefix("forwardpy.")


def _impl_note(cls: Any, name: str, ctx: _Context) -> str:
    if not ctx.view.imported:
        return " declared"
    func = active_impl(cls, name)
    if func is None:
        return " stub"
    module, line = impl_location(func)
    return f" impl {module}:{line}"


def _inactive_note(module: str, entry: Entry) -> str:
    if not any(d.startswith(("impl(", "forwardpy.impl(")) for d in entry.decorators):
        return ""
    active = is_active_impl(live_attr(module, [entry.name]))
    return " (inactive: another body is registered)" if active is False else ""


def _member_lines(view: ModuleView, names: list[str], depth: int, rt: Any) -> list[str]:
    entries = outline(view.source or "")
    entry = find(entries, names)
    if entry is None:
        raise TargetNotFound(f"{view.name}.{'.'.join(names)}", qualnames(view.name, entries))
    dirty = changed(entries, outline(view.disk_source or "")) if view.dirty else set()
    owner = live_attr(view.name, names[:-1]) if len(names) > 1 else None
    return _entry_lines(entry, depth, 0, _Context(view, dirty), declared_names(owner), owner)


@effect("read")
def view_source(path: str, start: int | None = None, end: int | None = None) -> str:
    """In-memory source of a module, class or function, with line numbers.

    For a declared (forwardpy) method, the declaration and its active implementation.

    Args:
        path: dotted path, e.g. pkg.mod or pkg.mod.Class.method
        start: first line to show (a line number of the module)
        end: last line to show (inclusive)
    """
    view, names = resolve(path, runtime())
    check_decodable(view)  # the error names the file, its encoding and the byte
    if view.source is None:
        return f"{view.name} has no Python source (compiled or built-in module)."
    lines = view.source.splitlines()
    first, last, entry = 1, len(lines), None
    if names:
        entry = find(outline(view.source), names)
        if entry is None:
            raise TargetNotFound(path, qualnames(view.name, outline(view.source)))
        first, last = entry.start, entry.end
    lo, hi = max(first, start or first), min(last, end or last)
    if lo > hi:
        asked = f"line {start}" if end is None else f"lines {start or first}-{end}"
        return f"{path}: lines {first}-{last}; nothing to show at {asked}."
    where = f"{view.filename if not view.virtual else 'memory only'}"
    header = f"# {view.name}:{lo}-{hi} of {len(lines)} ({where}){_marks(view)}"
    body = number_lines(lines[lo - 1 : hi], lo)
    text = f"{header}\n{body}" + _impl_body(view, names, entry)
    return clip(text, None, lambda n: f"view_source({path!r}, start={lo + n - 2})")


def _impl_body(view: ModuleView, names: list[str], entry: Entry | None) -> str:
    """The active implementation of a declared method, shown after its declaration."""
    if entry is None or len(names) < 2:
        return ""
    owner = live_attr(view.name, names[:-1])
    if names[-1] not in declared_names(owner):
        return ""
    func = active_impl(owner, names[-1])
    if func is None:
        return "# no @impl registered: the method is a stub\n"
    module, line = impl_location(func)
    impl_view = module_view(module, runtime())
    impl_entry = None
    if impl_view is not None and impl_view.source:
        impl_entry = next((e for e in outline(impl_view.source) if e.start == line), None)
    if impl_view is None or impl_view.source is None or impl_entry is None:
        return f"# active @impl: {module}:{line} (source unavailable)\n"
    body = impl_view.source.splitlines()[impl_entry.start - 1 : impl_entry.end]
    return f"# active @impl: {module}:{line}{_marks(impl_view)}\n" + number_lines(body, line)
