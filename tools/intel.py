"""Code intelligence with jedi: find definitions, list references, complete code.

jedi looks at the project's files and at the live program: in-memory patches and modules that
exist only in memory are searched in their current source, and completion runs against live
namespaces (``jedi.Interpreter``), so what the model sees is what runs.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from typing import Any

import jedi

from liveforge.declarations.permissions import effect
from liveforge.declarations.tool_schema import ArgumentError
from liveforge.kernel.errors import TargetNotFound
from liveforge.tools._context import runtime
from liveforge.tools._find import MAX_RESULTS, Kind, bounded, hits, query_problem, render, search
from liveforge.tools._index import Definition, DefinitionIndex, definition_index
from liveforge.tools._jedi import ModuleNames, memory_sources, project
from liveforge.tools._modules import resolve
from liveforge.tools._outline import find as find_entry
from liveforge.tools._outline import outline, parsed

__all__ = ["complete", "find", "references"]  # the tools; find_hits serves front ends


@effect("read")
def find(query: str, kind: Kind | None = None) -> str:
    """Find definitions by name across the project, in-memory changes included.

    Args:
        query: a name or dotted tail, e.g. area or Square.area
        kind: only this kind of definition
    """
    found, index = _definitions(query, kind)
    return render(found, query, kind, index.problems())


def _definitions(query: str, kind: Kind | None) -> tuple[list[Definition], DefinitionIndex]:
    """Definitions named `query` (a name or dotted tail), in-memory changes included, and
    the index they came from."""
    rt = runtime()
    problem = query_problem(query)
    if problem is not None:
        raise ArgumentError(problem, tool="find", problems=["query"])
    index = definition_index(rt, memory_sources(rt))
    return search(index, query, kind), index


def find_hits(query: str, kind: Kind | None = None) -> list[dict[str, Any]]:
    """The definitions `find` reports, as dicts (path, kind, signature, line, file, stub,
    exported_as) sorted by path, for front ends that print JSON."""
    found, index = _definitions(query, kind)
    return hits(found, index)


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
    names = ModuleNames(rt)
    index = definition_index(rt, memory_sources(rt))
    found: set[tuple[str, int, int]] = set()
    for module, source, filename in index.mentioning(entry.name):
        found |= _references_in(rt, names, module, source, filename, target, entry.name)
    return _render_refs(rt, target, found)


def _references_in(
    rt: Any,
    names: ModuleNames,
    module: str,
    source: str,
    filename: str | None,
    target: str,
    short: str,
) -> set[tuple[str, int, int]]:
    """References in one module's current source: names resolving to ``target``, or bound
    by importing it from its module (jedi cannot follow imports of virtual modules)."""
    imported = _imports_from(source, target.rsplit(".", 1)[0], short)
    script = jedi.Script(source, path=filename, project=project(rt))
    hits = set()
    for line, column in _occurrences(source, short):
        resolved = script.goto(line, column, follow_imports=True)
        # a name with no file resolves inside this very source (a virtual module)
        dotted = [names.dotted(r, None if r.module_path else module) for r in resolved]
        if target in dotted or (imported and not resolved):
            hits.add((module, line, column))
    return hits


def _occurrences(source: str, word: str) -> list[tuple[int, int]]:
    """Line and column of every name token ``word`` (not in strings or comments)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    return [t.start for t in tokens if t.type == tokenize.NAME and t.string == word]


def _imports_from(source: str, module: str, short: str) -> bool:
    tree = parsed(source)
    return tree is not None and any(
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
    return bounded([header, *lines], "ask about a narrower target")


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
    rows = [f"{c.name}{_signature(c)} {c.type}" for c in completions[:MAX_RESULTS]]
    more = len(completions) - len(rows)
    return "\n".join(rows + ([f"(+{more} more; type more letters)"] if more > 0 else []))


def _live_packages() -> dict[str, Any]:
    """Top-level imported modules by name, so ``pkg.virtual_mod.`` completes from memory."""
    return {
        name: module
        for name, module in list(sys.modules.items())
        if "." not in name and module is not None and not name.startswith("_")
    }
