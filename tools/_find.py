"""`find`'s answer from a definition index: the search, its text and its hits as data.

Shared by the `find` tool (over the runtime's index, in-memory changes included) and the
`liveforge find` command (over the index kept under `.liveforge/`, without a runtime), so
both say the same thing.
"""

from __future__ import annotations

from typing import Any, Literal

from liveforge.tools._index import Definition, DefinitionIndex
from liveforge.tools._output import clip

__all__ = ["KINDS", "MAX_RESULTS", "Kind", "bounded", "hits", "query_problem", "render", "search"]

Kind = Literal["class", "function", "module", "variable"]
KINDS: dict[str, set[str]] = {
    "class": {"class"},
    "function": {"def", "async def"},
    "module": {"module"},
    "variable": {"var"},
}
MAX_RESULTS = 60


def query_problem(query: str) -> str | None:
    """Why `query` cannot be searched for (None: it can)."""
    query = query.strip()
    if not query or not all(part.isidentifier() for part in query.split(".")):
        return f"{query!r} is not a name or dotted tail; give e.g. area or Square.area"
    return None


#: files named in a note after find's answer, at most
MAX_PROBLEMS = 5


def search(index: DefinitionIndex, query: str, kind: str | None) -> list[Definition]:
    """Definitions named `query` (a name or dotted tail), of `kind` when given."""
    return list(index.search(query.strip(), KINDS[kind] if kind else None))


def render(
    found: list[Definition], query: str, kind: str | None, problems: list[tuple[str, str]]
) -> str:
    """The text `find` answers with: one line per definition, bounded; then the files whose
    definitions are missing or garbled (`DefinitionIndex.problems`), so that "no
    definitions" is not said of a file that could not be read."""
    lines = sorted({_line(d) for d in found})
    notes = [f"note: {path}: {what}" for path, what in problems[:MAX_PROBLEMS]]
    if len(problems) > MAX_PROBLEMS:
        notes.append(f"note: {len(problems) - MAX_PROBLEMS} more files like these")
    if not lines:
        empty = f"no definitions named {query!r}" + (f" of kind {kind}" if kind else "")
        return "\n".join([empty, *notes]) + ("\n" if notes else "")
    text = bounded(lines, "narrow the query (dotted tail) or pass kind")
    return text + "".join(f"{note}\n" for note in notes)


def hits(found: list[Definition], index: DefinitionIndex) -> list[dict[str, Any]]:
    """The definitions as dicts (path, kind, signature, line, file, stub, exported_as, and
    why the file is not text in its encoding or None) sorted by path, for front ends that
    print JSON."""
    rows = {
        (d.dotted, d.line): {
            "path": d.dotted,
            "kind": d.kind,
            "signature": d.signature,
            "line": d.line,
            "file": index.file_of(d.module),
            "stub": d.stub,
            "exported_as": list(d.exported_as),
            "undecodable": d.undecodable or None,
        }
        for d in found
    }
    return [rows[key] for key in sorted(rows)]


def bounded(lines: list[str], how: str) -> str:
    """At most a screenful of `lines`, saying how many more there are and `how` to narrow."""
    shown = lines[:MAX_RESULTS]
    more = len(lines) - len(shown)
    text = "\n".join(shown + ([f"(+{more} more; {how})"] if more > 0 else [])) + "\n"
    return clip(text, None, lambda n: how)


def _line(definition: Definition) -> str:
    """``def pkg.mod.func(sig) :line``, marked when it comes from a stub or is re-exported."""
    text = f"{definition.kind} {definition.dotted}{definition.signature} :{definition.line}"
    if definition.stub:
        text += " (stub: no source)"
    if definition.exported_as:
        text += f" (exported as {', '.join(definition.exported_as)})"
    if definition.undecodable:
        text += f" (its file is {definition.undecodable}; names may show replaced bytes)"
    return text
