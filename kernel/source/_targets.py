"""Dotted targets: find a definition in a module's source and splice new source in its place.

`pkg.mod.Class.method` is split into the module (`pkg.mod`) and the path inside it
(`Class`, `method`). The definition is located in the module's *in-memory* source through its
statement index, and the new definition replaces exactly its lines (decorators included),
re-indented to where it stands, so the module text stays whole and coherent. A path whose
parent exists but whose last name does not is added at the end of its parent.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field

from liveforge.kernel.errors import PatchError, PatchSyntaxError, TargetNotFound
from liveforge.kernel.source._stmts import Index, first_line, split_lines

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class Location:
    """Where a definition stands (or would stand) in a module's source."""

    path: list[str]
    #: 1-based inclusive line range; for a missing definition, start = end + 1 = insert line.
    start: int
    end: int
    indent: str
    exists: bool
    node: ast.stmt | None = None
    #: a property's getter/setter/deleter statements, which together define one member.
    parts: list[ast.stmt] = field(default_factory=list)


def _property_role(node: ast.stmt) -> str | None:
    """The part one statement plays in a property ("getter", "setter", "deleter"), or None."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for decorator in node.decorator_list:
        name = ast.unparse(decorator).split("(")[0]
        if name == "property":
            return "getter"
        owner, _, role = name.rpartition(".")
        if owner == node.name and role in ("getter", "setter", "deleter"):
            return role
    return None


def kind_of(node: ast.stmt, in_class: bool) -> str:
    """What a definition is: class, function, method, property, classmethod, staticmethod
    or constant."""
    if isinstance(node, ast.ClassDef):
        return "class"
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "constant"
    if _property_role(node):
        return "property"
    names = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
    for special in ("classmethod", "staticmethod"):
        if special in names:
            return special
    return "method" if in_class else "function"


def _binds_only(node: ast.stmt, name: str) -> bool:
    if isinstance(node, _DEFS):
        return node.name == name
    if isinstance(node, ast.Assign):
        return all(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and node.target.id == name
    return False


def _find(body: list[ast.stmt], name: str) -> ast.stmt | None:
    found = None
    for node in body:
        if _binds_only(node, name):
            found = node
    return found


def _names(body: list[ast.stmt]) -> list[str]:
    names = []
    for node in body:
        if isinstance(node, _DEFS):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def locate(index: Index, module: str, path: list[str], like: ast.stmt | None = None) -> Location:
    """The location of `path` inside the module indexed by `index`: the last statement
    binding the name — of the kind of `like` (a definition, or not) when one is (a `def f`
    patched while a later `f = deco(f)` wraps it replaces the `def`)."""
    name = path[0]
    binding = (
        s
        for s in reversed(index.stmts)
        if (name in s.binds or isinstance(s.node, ast.AnnAssign)) and _binds_only(s.node, name)
    )
    stmt = next(binding, None)
    if like is not None and len(path) == 1 and stmt is not None:
        kind = isinstance(like, _DEFS)
        if isinstance(stmt.node, _DEFS) != kind:
            stmt = next((s for s in binding if isinstance(s.node, _DEFS) == kind), stmt)
    if stmt is None:
        if len(path) == 1:
            end = len(index.lines)
            return Location(path, end + 1, end, "", False)
        candidates = [f"{module}.{n}" for s in index.stmts for n in _names([s.node])]
        raise TargetNotFound(f"{module}.{'.'.join(path)}", candidates)
    node = stmt.fresh_node()
    parts: list[ast.stmt] = []
    for depth, name in enumerate(path[1:], start=1):
        if not isinstance(node, ast.ClassDef):
            raise TargetNotFound(
                f"{module}.{'.'.join(path)}",
                [],
                hint=f"{'.'.join(path[:depth])} is not a class; only class bodies can be "
                "entered by a dotted path.",
            )
        inner = _find(node.body, name)
        if inner is None:
            if depth == len(path) - 1:
                if node.body[0].lineno == node.lineno:
                    raise PatchError(
                        f"{module}.{'.'.join(path[:depth])} has its body on the header line "
                        f"(class {node.name}: ...), so {name!r} cannot be added inside it; "
                        "patch the whole class instead.",
                        target=f"{module}.{'.'.join(path)}",
                    )
                indent = _indent(index.lines, node.body[0])
                end = node.end_lineno or node.lineno
                return Location(path, end + 1, end, indent, False)
            prefix = f"{module}.{'.'.join(path[:depth])}"
            raise TargetNotFound(
                f"{module}.{'.'.join(path)}", [f"{prefix}.{n}" for n in _names(node.body)]
            )
        parts = _property_parts(node.body, inner)
        node = inner
    first = parts[0] if parts else node
    return Location(
        path,
        first_line(first),
        node.end_lineno or node.lineno,
        _indent(index.lines, node),
        True,
        first,
        parts,
    )


def _property_parts(body: list[ast.stmt], last: ast.stmt) -> list[ast.stmt]:
    """The run of property statements (getter, setter, deleter) that ends with `last`."""
    if _property_role(last) is None:
        return []
    position = body.index(last)
    first = position
    while (
        first > 0
        and getattr(body[first - 1], "name", None) == getattr(last, "name", None)
        and _property_role(body[first - 1]) is not None
    ):
        first -= 1
    return body[first : position + 1]


def narrow(location: Location, text: str) -> Location:
    """For a property patched with only one of its parts (say, only the getter), the
    location of that part alone, so its other parts (the setter) stay as they are."""
    if len(location.parts) < 2:
        return location
    new = ast.parse(text).body
    role = _property_role(new[0]) if len(new) == 1 else None
    same = [p for p in location.parts if _property_role(p) == role]
    if role is None or len(same) != 1:
        return location
    node = same[0]
    return Location(
        location.path, first_line(node), node.end_lineno or node.lineno, location.indent, True, node
    )


def _indent(lines: list[str], node: ast.stmt) -> str:
    """The leading whitespace of `node` exactly as written (tabs stay tabs)."""
    prefix = lines[node.lineno - 1][: node.col_offset]
    return prefix if not prefix.strip() else " " * node.col_offset


_BLANK_WITH_SPACE = re.compile(r"^[ \t]+$", re.MULTILINE)


def _dedent(source: str) -> str:
    """`textwrap.dedent(source)`, without its work when the first line is not indented."""
    if source[:1] not in ("", " ", "\t", "\n", "\r") and not _BLANK_WITH_SPACE.search(source):
        return source
    return textwrap.dedent(source)


def parse_definition(source: str, name: str, target: str, first: int = 1) -> tuple[str, ast.stmt]:
    """Dedent and check a definition's source: one statement that defines `name`. Its node
    has the line numbers it has once its first line is line `first` of the module."""
    dedented = _dedent(source)
    text = dedented.strip("\n") + "\n"
    try:
        tree = ast.parse("\n" * (first - 1) + text)
    except SyntaxError as exc:
        blank = len(dedented) - len(dedented.lstrip("\n"))  # leading lines stripped above
        line = exc.lineno - first + 1 + blank if exc.lineno is not None else None
        raise PatchSyntaxError(
            f"the new source for {target} does not compile: {exc.msg} (line {line} of "
            "the given source). Fix it and patch again; nothing was changed.",
            target=target,
            line=line,
            text=exc.text,
            offset=exc.offset,
        ) from None
    chain = len(tree.body) > 1 and all(_property_role(n) for n in tree.body)
    if (
        not tree.body
        or not all(_binds_only(n, name) for n in tree.body)
        or (len(tree.body) > 1 and not chain)
    ):
        defined = ", ".join(_names(tree.body)) or "nothing"
        raise PatchError(
            f"the source for {target} must be one definition of {name!r} (a def, class or "
            f"assignment); it defines {defined}. Patch the module with patch_module() to "
            "change several definitions at once.",
            target=target,
        )
    return text, tree.body[0]


def splice(lines: list[str], location: Location, text: str) -> tuple[str, list[str]]:
    """The module source with `text` standing at `location` (re-indented), and its lines
    (as `_stmts.split_lines` gives them); they replace `lines[location.start - 1 :
    location.end]`."""
    body = [
        (location.indent + line) if line.strip() else line
        for line in text.splitlines(keepends=True)
    ]
    before, after = lines[: location.start - 1], lines[location.end :]
    if not location.exists:
        if location.indent:
            body.insert(0, "\n")
        elif before and before[-1].strip():
            body[:0] = ["\n", "\n"]
    new_lines = before + body + after
    source = "".join(new_lines)
    if before and before[-1].endswith("\r") and body and body[0].startswith("\n"):
        new_lines = split_lines(source)  # a lone CR before the body joins its line break
    return source, new_lines


def keep_decorators(old: ast.stmt, lines: list[str], text: str, new: ast.stmt) -> str:
    """`text` with the decorators of `old` when the new definition has none of its own."""
    if getattr(new, "decorator_list", None) or not getattr(old, "decorator_list", None):
        return text
    head = lines[first_line(old) - 1 : old.lineno - 1]
    indent = old.col_offset
    return "".join(line[indent:] for line in head) + text
