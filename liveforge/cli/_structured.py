"""`--json` of `inspect`, `view` and `find` as data: the same facts as the tools' text.

`inspect` gives a tree of nodes (path, kind, file, line, signature, impl location, children),
`view` the source lines with numbers and where they come from (memory or file), `find` the
list of hits. The shapes are in `liveforge/cli/schema.json`.
"""

from __future__ import annotations

import difflib
from typing import Any

from liveforge.kernel.errors import TargetNotFound
from liveforge.tools._declared import active_impl, declared_names, impl_location, live_attr
from liveforge.tools._modules import ModuleView, module_view, resolve, submodules, top_level
from liveforge.tools._outline import Entry, changed, find, module_doc, outline, qualnames

__all__ = ["inspect_tree", "source_lines"]

_KINDS = {"class": "class", "def": "function", "async def": "async function", "var": "variable"}


def inspect_tree(rt: Any, path: str, depth: int) -> dict[str, Any]:
    """The tree under `path` (the project's packages when empty), `depth` levels deep."""
    if not path:
        names = top_level(rt)
        return {
            "path": "",
            "kind": "project",
            "file": str(rt.project_root),
            "children": [_module(rt, name, depth - 1) for name in names],
        }
    view, names = resolve(path, rt)
    if not names:
        return _module(rt, view.name, depth)
    entries = outline(view.source or "")
    entry = find(entries, names)
    if entry is None:
        raise TargetNotFound(path, qualnames(view.name, entries))
    owner = live_attr(view.name, names[:-1]) if len(names) > 1 else None
    return _entry(view, entry, depth, _dirty(view, entries), owner)


def _module(rt: Any, name: str, depth: int) -> dict[str, Any]:
    view = module_view(name, rt)
    if view is None:
        return {"path": name, "kind": "module", "state": "not found", "children": []}
    entries = outline(view.source or "")
    node: dict[str, Any] = {
        "path": name,
        "kind": "package" if view.is_package else "module",
        "file": None if view.virtual else view.filename or None,
        "line": None,
        "state": _state(view),
        "doc": module_doc(view.source or "") or "",
        "children": [],
    }
    if depth > 0:
        dirty = _dirty(view, entries)
        node["children"] = [_module(rt, child, depth - 1) for child in submodules(view, rt)] + [
            _entry(view, entry, depth - 1, dirty, None) for entry in entries if entry.public
        ]
    return node


def _entry(
    view: ModuleView, entry: Entry, depth: int, dirty: set[str], owner: Any
) -> dict[str, Any]:
    kind = _KINDS.get(entry.kind, entry.kind)
    if "." in entry.qualname and kind.endswith("function"):
        kind = kind.replace("function", "method")
    node: dict[str, Any] = {
        "path": f"{view.name}.{entry.qualname}",
        "kind": kind,
        "file": None if view.virtual else view.filename or None,
        "line": entry.start,
        "end_line": entry.end,
        "signature": entry.signature,
        "decorators": entry.decorators,
        "doc": entry.doc,
        "changed": entry.qualname in dirty,
        "impl": _impl(owner, entry.name, view),
        "children": [],
    }
    if entry.kind == "class" and depth > 0:
        cls = live_attr(view.name, entry.qualname.split("."))
        node["children"] = [
            _entry(view, child, depth - 1, dirty, cls) for child in entry.children if child.public
        ]
    return node


def _impl(owner: Any, name: str, view: ModuleView) -> dict[str, Any] | None:
    """Where a declared method's active body is; None for anything else."""
    if owner is None or name not in declared_names(owner) or not view.imported:
        return None
    func = active_impl(owner, name)
    if func is None:
        return {"stub": True, "module": None, "line": None}
    module, line = impl_location(func)
    return {"stub": False, "module": module, "line": line}


def _state(view: ModuleView) -> str:
    if view.virtual:
        return "memory only"
    if view.dirty:
        return "changed"
    return "imported" if view.imported else "not imported"


def _dirty(view: ModuleView, entries: list[Entry]) -> set[str]:
    return changed(entries, outline(view.disk_source or "")) if view.dirty else set()


def source_lines(
    rt: Any, path: str, start: int | None = None, end: int | None = None
) -> dict[str, Any]:
    """The source of `path` as numbered lines, and whether they are memory's or the file's."""
    view, names = resolve(path, rt)
    lines = (view.source or "").splitlines()
    first, last = 1, len(lines)
    if names:
        entries = outline(view.source or "")
        entry = find(entries, names)
        if entry is None:
            raise TargetNotFound(path, qualnames(view.name, entries))
        first, last = entry.start, entry.end
    lo, hi = max(first, start or first), min(last, end or last)
    origins = line_origins(view)
    return {
        "path": path,
        "module": view.name,
        "file": None if view.virtual else view.filename or None,
        "origin": "memory" if view.dirty else "file",
        "state": _state(view),
        "start": lo,
        "end": hi,
        "total_lines": len(lines),
        "lines": [
            {"number": n, "text": lines[n - 1], "origin": origins[n - 1]} for n in range(lo, hi + 1)
        ],
    }


def line_origins(view: ModuleView) -> list[str]:
    """For each line of the in-memory source, "file" when the file has it at the matching
    place, "memory" when a change made it (every line of a module with no file)."""
    lines = (view.source or "").splitlines()
    if view.virtual or view.disk_source is None:
        return ["memory"] * len(lines)
    if not view.dirty:
        return ["file"] * len(lines)
    origins = ["memory"] * len(lines)
    matcher = difflib.SequenceMatcher(None, view.disk_source.splitlines(), lines, autojunk=False)
    for block in matcher.get_matching_blocks():
        origins[block.b : block.b + block.size] = ["file"] * block.size
    return origins
