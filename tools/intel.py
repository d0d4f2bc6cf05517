"""Code intelligence with jedi: find definitions, list references, complete code.

jedi looks at the project's files and at the live program: in-memory patches and modules that
exist only in memory are searched in their current source, and completion runs against live
namespaces (``jedi.Interpreter``), so what the model sees is what runs.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any, Literal

import jedi

from liveforge.declarations.permissions import effect
from liveforge.declarations.tool_schema import ArgumentError
from liveforge.kernel.errors import TargetNotFound
from liveforge.tools._context import runtime
from liveforge.tools._jedi import ModuleNames, in_run_records, memory_sources, project
from liveforge.tools._modules import resolve
from liveforge.tools._outline import find as find_entry
from liveforge.tools._outline import outline
from liveforge.tools._output import clip

__all__ = ["complete", "find", "references"]

Kind = Literal["class", "function", "module", "variable"]
_KINDS = {
    "class": {"class"},
    "function": {"function", "property"},
    "module": {"module"},
    "variable": {"statement", "instance"},
}
_MAX_RESULTS = 60


@effect("read")
def find(query: str, kind: Kind | None = None) -> str:
    """Find definitions by name across the project, in-memory changes included.

    Args:
        query: a name or dotted tail, e.g. area or Square.area
        kind: only this kind of definition
    """
    rt = runtime()
    names = ModuleNames(rt)
    memory = memory_sources(rt)
    stale = {Path(f).resolve() for _, _, f in memory if f}
    jedi_project = project(rt)
    hits: list[tuple[str, str]] = []
    for name in jedi_project.search(query, all_scopes=True):
        if in_run_records(rt, name.module_path):
            continue
        if name.module_path is None or Path(name.module_path).resolve() not in stale:
            hits.append(_hit(name, names, None, kind))
    for module, source, filename in memory:
        script = jedi.Script(source, path=filename, project=jedi_project)
        hits += [_hit(name, names, module, kind) for name in script.search(query, all_scopes=True)]
    lines = sorted({text for key, text in hits if key})
    if not lines:
        return f"no definitions named {query!r}" + (f" of kind {kind}" if kind else "")
    return _bounded(lines, "narrow the query (dotted tail) or pass kind")


def _hit(name: Any, names: ModuleNames, module: str | None, kind: Kind | None) -> tuple[str, str]:
    """``(key, line)``; an empty key drops the hit (parameters, other kinds)."""
    if name.type == "param" or (kind is not None and name.type not in _KINDS[kind]):
        return "", ""
    if name.get_line_code().lstrip().startswith(("from ", "import ")):
        return "", ""  # an import binds a name; the definition is found where it lives
    dotted = names.dotted(name, module)
    signature = _signature(name)
    label = {"statement": "var", "instance": "var", "function": "def"}.get(name.type, name.type)
    return dotted, f"{label} {dotted}{signature} :{name.line}"


def _signature(name: Any) -> str:
    if name.type not in ("function", "class"):
        return ""
    try:
        signatures = name.get_signatures()
    except Exception:  # jedi cannot infer every signature; the name alone still helps
        return ""
    if not signatures:
        return ""
    text = signatures[0].to_string()
    return text[text.index("(") :] if "(" in text else ""


@effect("read")
def references(path: str) -> str:
    """Where a definition is used, in files and in in-memory modules.

    Args:
        path: dotted path of a function, class, method or module-level name
    """
    rt = runtime()
    view, parts = resolve(path, rt)
    entry = find_entry(outline(view.source or ""), parts) if parts else None
    if entry is None:
        raise TargetNotFound(path, [], "references needs a definition inside a module.")
    target = f"{view.name}.{entry.qualname}"
    line, column = _name_position(view.source or "", entry.start, entry.name)
    names = ModuleNames(rt)
    memory = memory_sources(rt)
    stale = {Path(f).resolve() for m, _, f in memory if f and m != view.name}
    script = jedi.Script(
        view.source, path=None if view.virtual else view.filename, project=project(rt)
    )
    found = set()
    for ref in script.get_references(line, column, scope="project"):
        ref_path = Path(ref.module_path).resolve() if ref.module_path else None
        if ref_path not in stale and not in_run_records(rt, ref_path):
            module = view.name if ref_path is None else names.of_path(ref_path)
            found.add((module or str(ref_path), ref.line, ref.column))
    for module, source, filename in memory:
        if module != view.name:
            found |= _memory_refs(rt, names, module, source, filename, target, entry.name)
    return _render_refs(rt, target, found)


def _name_position(source: str, start: int, name: str) -> tuple[int, int]:
    """Line and column of ``name`` in the definition starting at ``start`` (after decorators)."""
    lines = source.splitlines()
    pattern = re.compile(rf"\b(?:def|class)\s+({re.escape(name)})\b|^\s*({re.escape(name)})\b")
    for number in range(start, len(lines) + 1):
        match = pattern.search(lines[number - 1])
        if match:
            return number, match.start(1 if match.group(1) else 2)
    return start, 0


def _memory_refs(
    rt: Any,
    names: ModuleNames,
    module: str,
    source: str,
    filename: str | None,
    target: str,
    short: str,
) -> set[tuple[str, int, int]]:
    """References in one in-memory source: names resolving to ``target``, or bound by
    importing it from its module (jedi cannot follow imports of virtual modules)."""
    if not re.search(rf"\b{re.escape(short)}\b", source):
        return set()
    imported = _imports_from(source, target.rsplit(".", 1)[0], short)
    script = jedi.Script(source, path=filename, project=project(rt))
    hits = set()
    for name in script.get_names(all_scopes=True, references=True, definitions=True):
        if name.name != short:
            continue
        resolved = name.goto(follow_imports=True)
        if any(names.dotted(r) == target for r in resolved) or (imported and not resolved):
            hits.add((module, name.line, name.column))
    return hits


def _imports_from(source: str, module: str, short: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == module
        and any(alias.name == short for alias in node.names)
        for node in ast.walk(tree)
    )


def _render_refs(rt: Any, target: str, found: set[tuple[str, int, int]]) -> str:
    if not found:
        return f"no references to {target}"
    sources: dict[str, list[str]] = {}
    lines = []
    for module, line, column in sorted(found):
        if module not in sources:
            view = resolve(module, rt)[0] if module else None
            sources[module] = (view.source or "").splitlines() if view else []
        text = sources[module][line - 1].strip() if line <= len(sources[module]) else ""
        lines.append(f"{module}:{line}:{column} {text}")
    header = f"{len(found)} references to {target}"
    return _bounded([header, *lines], "ask about a narrower target")


@effect("read")
def complete(code: str, line: int | None = None, column: int | None = None) -> str:
    """Completions at a position in code, against the live program's namespaces.

    Args:
        code: code to complete; names of imported packages and of execute() are live
        line: 1-based line of the cursor (default: last line)
        column: 0-based column (default: end of that line)
    """
    rt = runtime()
    lines = code.splitlines() or [""]
    line = len(lines) if line is None else line
    if not 1 <= line <= len(lines):
        raise ArgumentError(
            f"line {line} is outside the code, which has lines 1-{len(lines)}",
            tool="complete",
            problems=["line"],
        )
    end = len(lines[line - 1])
    column = end if column is None else column
    if not 0 <= column <= end:
        raise ArgumentError(
            f"column {column} is outside line {line}, which has columns 0-{end}",
            tool="complete",
            problems=["column"],
        )
    namespaces = [getattr(rt, "namespace", {}), _live_packages()]
    completions = jedi.Interpreter(code, namespaces).complete(line, column)
    if not completions:
        return "no completions"
    rows = [f"{c.name}{_signature(c)} {c.type}" for c in completions[:_MAX_RESULTS]]
    more = len(completions) - len(rows)
    return "\n".join(rows + ([f"(+{more} more; type more letters)"] if more > 0 else []))


def _live_packages() -> dict[str, Any]:
    """Top-level imported modules by name, so ``pkg.virtual_mod.`` completes from memory."""
    return {
        name: module
        for name, module in list(sys.modules.items())
        if "." not in name and module is not None and not name.startswith("_")
    }


def _bounded(lines: list[str], how: str) -> str:
    shown = lines[:_MAX_RESULTS]
    more = len(lines) - len(shown)
    text = "\n".join(shown + ([f"(+{more} more; {how})"] if more > 0 else [])) + "\n"
    return clip(text, None, lambda n: how)
