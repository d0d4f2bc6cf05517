"""The outline of a module's source: its classes, functions and names, read with ``ast``.

Reading the source rather than the live objects gives signatures exactly as written (a
forwardpy declaration's live methods are stubs taking ``*args, **kwargs``), works for modules
that are not imported, and gives line numbers that match ``view_source``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "Entry",
    "changed",
    "find",
    "first_sentence",
    "module_doc",
    "outline",
    "parsed",
    "qualnames",
]

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_MAX_VALUE = 40


@dataclass
class Entry:
    """One definition: ``kind`` is class, def, async def or var."""

    kind: str
    name: str
    qualname: str
    start: int
    end: int
    #: the signature, or how to render it: most are never shown, and rendering is the
    #: costly part of an outline.
    signature_source: str | Callable[[], str] = field(default="", repr=False)
    doc: str = ""
    decorators: list[str] = field(default_factory=list)
    children: list[Entry] = field(default_factory=list)
    text: str = ""

    @property
    def signature(self) -> str:
        """``(a, b=1) -> int`` for a function (without self/cls), bases for a class,
        ``: type = value`` for a variable."""
        if callable(self.signature_source):
            self.signature_source = self.signature_source()
        return self.signature_source

    @property
    def public(self) -> bool:
        """Not underscore-prefixed; dunder methods (``__init__``) count, dunder names do not."""
        if not self.name.startswith("_"):
            return True
        return self.kind != "var" and self.name.startswith("__") and self.name.endswith("__")


@functools.lru_cache(maxsize=2048)
def parsed(source: str) -> ast.Module | None:
    """The syntax tree of ``source`` (None when it does not parse), parsed once per text:
    inspect, find and view ask about the same sources many times. Read it, never change it."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=2048)
def _cached_outline(source: str) -> tuple[Entry, ...]:
    tree = parsed(source)
    if tree is None:
        return ()
    return tuple(_entries(tree.body, source.splitlines(), "", in_class=False))


def outline(source: str) -> list[Entry]:
    """Top-level entries of ``source``; an unparsable source gives an empty outline.

    Built once per source text; the entries are shared, so treat them as read-only."""
    return list(_cached_outline(source))


def find(entries: list[Entry], names: list[str]) -> Entry | None:
    """The entry at ``names`` (e.g. ``["Class", "method"]``), or None."""
    current: Entry | None = None
    for name in names:
        pool = entries if current is None else current.children
        matches = [e for e in pool if e.name == name]
        if not matches:
            return None
        current = matches[-1]  # the last binding wins, as at run time
    return current


def qualnames(module: str, entries: list[Entry]) -> list[str]:
    """Every definition of an outline as a dotted path under `module`, nested ones too
    (the close matches offered for a path that names nothing)."""
    out: list[str] = []
    for entry in entries:
        out.append(f"{module}.{entry.qualname}")
        out += qualnames(module, entry.children)
    return out


def changed(memory: list[Entry], disk: list[Entry] | None) -> set[str]:
    """Qualified names whose text differs between the in-memory and disk outlines."""
    old = _texts(disk or [])
    return {name for name, text in _texts(memory).items() if old.get(name) != text}


def _texts(entries: list[Entry]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for entry in entries:
        texts[entry.qualname] = entry.text
        texts.update(_texts(entry.children))
    return texts


def _entries(body: list[ast.stmt], lines: list[str], prefix: str, in_class: bool) -> list[Entry]:
    entries: list[Entry] = []
    for node in body:
        entry = _entry(node, lines, prefix, in_class)
        if entry is None:
            continue
        if entries and _extends_property(entries[-1], entry):
            # A property's setter or deleter is part of the member its getter began.
            whole = entries[-1]
            whole.end, whole.text = entry.end, "\n".join(lines[whole.start - 1 : entry.end])
            continue
        entries.append(entry)
    return entries


def _extends_property(previous: Entry, entry: Entry) -> bool:
    parts = {f"{entry.name}.{role}" for role in ("getter", "setter", "deleter")}
    return (
        previous.name == entry.name
        and previous.kind in ("def", "async def")
        and any(d in parts for d in entry.decorators)
    )


def _entry(node: ast.stmt, lines: list[str], prefix: str, in_class: bool) -> Entry | None:
    if isinstance(node, ast.ClassDef):
        return _class(node, lines, prefix)
    if isinstance(node, _FUNCS):
        return _function(node, lines, prefix, in_class)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return _variable(node, lines, prefix)
    return None


def _span(node: ast.stmt, lines: list[str]) -> tuple[int, int, str]:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno] + [d.lineno for d in decorators])
    end = node.end_lineno or node.lineno
    return start, end, "\n".join(lines[start - 1 : end])


def _class(node: ast.ClassDef, lines: list[str], prefix: str) -> Entry:
    start, end, text = _span(node, lines)
    qualname = prefix + node.name
    return Entry(
        "class",
        node.name,
        qualname,
        start,
        end,
        lambda: _bases(node),
        _doc(node),
        [ast.unparse(d) for d in node.decorator_list],
        _entries(node.body, lines, qualname + ".", in_class=True),
        text,
    )


def _bases(node: ast.ClassDef) -> str:
    bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
    return f"({', '.join(bases)})" if bases else ""


def _function(
    node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], prefix: str, in_class: bool
) -> Entry:
    start, end, text = _span(node, lines)
    decorators = [ast.unparse(d) for d in node.decorator_list]
    drop_first = in_class and "staticmethod" not in decorators
    kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return Entry(
        kind,
        node.name,
        prefix + node.name,
        start,
        end,
        lambda: _function_signature(node, drop_first),
        _doc(node),
        decorators,
        [],
        text,
    )


def _function_signature(node: ast.FunctionDef | ast.AsyncFunctionDef, drop_first: bool) -> str:
    args = node.args
    if drop_first and (args.posonlyargs or args.args):
        args = _without_first(args)  # self / cls is implied
    signature = f"({ast.unparse(args)})"
    if node.returns is not None:
        signature += f" -> {ast.unparse(node.returns)}"
    return signature


def _without_first(args: ast.arguments) -> ast.arguments:
    copy = ast.arguments(
        posonlyargs=list(args.posonlyargs),
        args=list(args.args),
        vararg=args.vararg,
        kwonlyargs=args.kwonlyargs,
        kw_defaults=args.kw_defaults,
        kwarg=args.kwarg,
        defaults=list(args.defaults),
    )
    positional = copy.posonlyargs + copy.args
    if len(copy.defaults) == len(positional):  # the first parameter had a default
        copy.defaults = copy.defaults[1:]
    if copy.posonlyargs:
        copy.posonlyargs = copy.posonlyargs[1:]
    else:
        copy.args = copy.args[1:]
    return copy


def _variable(node: ast.Assign | ast.AnnAssign, lines: list[str], prefix: str) -> Entry | None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if len(targets) != 1 or not isinstance(targets[0], ast.Name):
        return None
    name = targets[0].id
    start, end, text = _span(node, lines)
    return Entry(
        "var", name, prefix + name, start, end, lambda: _annotation(node), "", [], [], text
    )


def _annotation(node: ast.Assign | ast.AnnAssign) -> str:
    signature = ""
    if isinstance(node, ast.AnnAssign):
        signature = f": {ast.unparse(node.annotation)}"
    if node.value is not None:
        value = ast.unparse(node.value)
        signature += f" = {value if len(value) <= _MAX_VALUE else '…'}"
    return signature


def _doc(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    return first_sentence(ast.get_docstring(node) or "")


def first_sentence(doc: str, limit: int = 100) -> str:
    """The docstring's first sentence (its first paragraph cut at ". "), at most ``limit``."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = paragraph.split(". ")[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def module_doc(source: str, limit: int = 100) -> str | None:
    """First sentence of a module's docstring; None when the source does not parse."""
    tree = parsed(source)
    return None if tree is None else first_sentence(ast.get_docstring(tree) or "", limit)
