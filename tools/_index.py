"""The definition index: every definition of a project, by name, built once and kept current.

One index per runtime. The first question walks the project's import roots and outlines each
file (``_outline``: names, kinds, signatures, lines); later questions only re-read files whose
size or modification time changed, drop files that are gone, and outline the in-memory
source of modules whose memory differs from disk (patched, reloaded, virtual) in place of
their files. A package's ``from .x import name`` and ``from .x import *`` are recorded as
re-exports (a star takes the names in ``x.__all__`` when it is a literal, else ``x``'s public
top-level names), so a definition is also shown, and found, under the name users import it
by. Stub files (``.pyi``) are indexed only
where no source exists for the same module, and their definitions are labelled ``stub``.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from liveforge.kernel.defaults import RUNS_FOLDER
from liveforge.kernel.files._statefolder import make_parent
from liveforge.kernel.source._roots import NOT_PACKAGES, ImportRoots
from liveforge.tools._outline import Entry, outline, parsed
from liveforge.tools._outline import find as find_entry

__all__ = ["Definition", "DefinitionIndex", "definition_index", "stored_index"]

_SKIP_DIRS = (NOT_PACKAGES - {"tests", "test", "bench", "benchmarks", "scripts", "examples"}) | {
    "__pycache__",
    RUNS_FOLDER,
}


@dataclass(frozen=True)
class Definition:
    """One definition: ``kind`` is class, def, async def, var or module."""

    module: str
    qualname: str
    kind: str
    line: int
    stub: bool = False
    entry: Entry | None = field(default=None, repr=False, compare=False)
    exported_as: tuple[str, ...] = ()
    undecodable: str = ""
    """Why its file is not text in its encoding (read with replacement characters), if so."""

    @property
    def name(self) -> str:
        """The last part of the qualified name (the module's own for a module)."""
        return (self.qualname or self.module).rpartition(".")[2]

    @property
    def dotted(self) -> str:
        """The full dotted path: module, then qualified name."""
        return f"{self.module}.{self.qualname}" if self.qualname else self.module

    @property
    def signature(self) -> str:
        """The signature as written (rendered on first use)."""
        return self.entry.signature if self.entry is not None else ""


@dataclass
class _FileIndex:
    """What one source (a file, or a module's in-memory text) defines."""

    module: str
    stamp: tuple[int, int] | str
    definitions: list[Definition]
    reexports: dict[str, str] = field(default_factory=dict)  # name -> dotted origin
    filename: str | None = None  # of an in-memory module backed by a file
    stars: tuple[str, ...] = ()  # modules of its `from m import *`
    public: tuple[str, ...] | None = None  # a literal `__all__`
    digest: str = ""  # of a file's bytes: a file touched but not changed is not re-read
    undecodable: str = ""  # why the file is not text in its encoding (read replaced)
    unparsed: str = ""  # why the file does not parse (its definitions are not indexed)

    def top_names(self) -> list[str]:
        """What `from <this module> import *` binds, as far as the source says."""
        if self.public is not None:
            return list(self.public)
        own = [d.qualname for d in self.definitions if d.qualname and "." not in d.qualname]
        return [n for n in [*own, *self.reexports] if not n.startswith("_")]


class DefinitionIndex:
    """Definitions of one project's modules, kept current question by question."""

    def __init__(self, roots: ImportRoots) -> None:
        self.roots = roots
        self._files: dict[Path, _FileIndex] = {}
        self._memory: dict[str, _FileIndex] = {}
        self._names: dict[str, tuple[Path, str | None]] = {}  # walked path -> resolved, module
        self._by_name: dict[str, list[Definition]] | None = None
        #: sources outlined by the last `refresh` (files and in-memory modules).
        self.parsed_last = 0
        #: whether the last `refresh` found any file changed, added or gone
        self.touched = False

    def refresh(self, memory: Sequence[tuple[str, str, str | None]] = ()) -> None:
        """Bring the index up to date with the files and with in-memory ``(module, source,
        filename)`` sources, re-outlining only what changed."""
        self.parsed_last = 0
        self.touched = False
        seen: set[Path] = set()
        for path, module in self._sources():
            seen.add(path)
            try:
                info = path.stat()
            except OSError:
                continue
            stamp = (info.st_mtime_ns, info.st_size)
            known = self._files.get(path)
            if known is None or known.stamp != stamp or known.module != module:
                self._files[path] = self._index_file(path, module, stamp, known)
        gone = set(self._files) - seen
        for path in gone:
            del self._files[path]
        self.touched = self.touched or bool(gone)
        current = {name for name, _, _ in memory}
        dropped = set(self._memory) - current
        for name in dropped:
            del self._memory[name]
        for name, source, filename in memory:
            known = self._memory.get(name)
            if known is None or known.stamp != source:
                package = (filename or "").endswith("__init__.py")
                self._memory[name] = self._index(name, source, source, stub=False, package=package)
                self._memory[name].filename = filename
        if self.parsed_last or gone or dropped:
            self._by_name = None

    def _index_file(
        self, path: Path, module: str, stamp: tuple[int, int], known: _FileIndex | None
    ) -> _FileIndex:
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        import hashlib  # only when a file changed: OpenSSL's part costs a cold command time

        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        self.touched = True
        if known is not None and known.digest == digest and known.module == module:
            known.stamp = stamp  # saved again, or touched: the same text
            return known
        package = path.stem == "__init__"
        source, problem = source_text(data, path)
        found = self._index(module, source, stamp, stub=path.suffix == ".pyi", package=package)
        found.digest = digest
        _mark_undecodable(found, problem)
        return found

    def _index(
        self, module: str, source: str, stamp: Any, *, stub: bool, package: bool
    ) -> _FileIndex:
        self.parsed_last += 1
        entries = outline(source)
        definitions = [Definition(module, "", "module", 1, stub)]
        definitions += [d for e in entries for d in _flatten(module, e, stub)]
        reexports, stars = _reexports(module, source) if package else ({}, ())
        found = _FileIndex(module, stamp, definitions, reexports, stars=stars, public=_all(source))
        if not entries and source.strip() and parsed(source) is None:
            found.unparsed = _syntax_error(source)
        return found

    def _sources(self) -> list[tuple[Path, str]]:
        """``(file, module)`` of every source under the import roots, one file per module:
        a ``.pyi`` only where no ``.py`` exists, and never a module twice."""
        found: dict[str, tuple[Path, str]] = {}
        folders = [*self.roots.packages.values(), *self.roots.paths]
        for folder in dict.fromkeys(folders):
            for path in _walk(folder):
                resolved, module = self._module_of(path)
                if module is None:
                    continue
                known = found.get(module)
                if known is None or (known[1].endswith(".pyi") and path.endswith(".py")):
                    found[module] = (resolved, path)
        return [(resolved, module) for module, (resolved, _) in found.items()]

    def _module_of(self, path: str) -> tuple[Path, str | None]:
        known = self._names.get(path)
        if known is None:
            resolved = Path(path).resolve()
            known = self._names[path] = (resolved, self.roots.module_name(resolved))
        return known

    def definitions(self) -> list[Definition]:
        """Every definition: files, with in-memory modules in place of their files."""
        return [d for group in self._grouped().values() for d in group]

    def problems(self) -> list[tuple[str, str]]:
        """``(file, what is wrong)`` for each indexed file whose definitions are missing
        (it does not parse) or may show replaced bytes (it is not text in its encoding)."""
        found = []
        for path, index in sorted(self._files.items()):
            said = []
            if index.undecodable:
                said.append(index.undecodable)
            if index.unparsed:
                said.append(f"does not parse: {index.unparsed}; its definitions are not searched")
            elif index.undecodable:
                said.append("names may show replaced bytes")
            if said:
                found.append((str(path), "; ".join(said)))
        return found

    def file_of(self, module: str) -> str | None:
        """The file module `module` was indexed from (its backing file when in memory)."""
        memory = self._memory.get(module)
        if memory is not None and memory.filename:
            return memory.filename
        return next((str(p) for p, f in self._files.items() if f.module == module), None)

    def search(self, query: str, kind: set[str] | None = None) -> list[Definition]:
        """Definitions named ``query``, or whose dotted path ends with it (``Square.area``)."""
        tail = "." + query
        return [
            d
            for d in self._grouped().get(query.rpartition(".")[2], [])
            if any(p == query or p.endswith(tail) for p in (d.dotted, *d.exported_as))
            and (kind is None or d.kind in kind)
        ]

    def mentioning(self, word: str) -> list[tuple[str, str, str | None]]:
        """``(module, current source, filename)`` of every module whose text has ``word`` as
        a word (stubs left out): the first filter of a references search."""
        pattern = re.compile(rf"\b{re.escape(word)}\b")
        found: list[tuple[str, str, str | None]] = []
        for path, index in self._files.items():
            if index.module in self._memory or path.suffix == ".pyi":
                continue
            try:
                text = source_text(path.read_bytes(), path)[0]
            except OSError:
                continue
            if pattern.search(text):
                found.append((index.module, text, str(path)))
        for module, index in self._memory.items():
            if isinstance(index.stamp, str) and pattern.search(index.stamp):
                found.append((module, index.stamp, index.filename))
        return found

    def _grouped(self) -> dict[str, list[Definition]]:
        """Definitions by their last name, re-exported names filled in; rebuilt on change."""
        if self._by_name is None:
            exported = self._exported()
            grouped: dict[str, list[Definition]] = {}
            for index in self._indexes():
                for definition in index.definitions:
                    names = exported.get(definition.dotted)
                    if names:
                        definition = replace(definition, exported_as=names)
                    grouped.setdefault(definition.name, []).append(definition)
            self._by_name = grouped
        return self._by_name

    def _indexes(self) -> list[_FileIndex]:
        files = [i for i in self._files.values() if i.module not in self._memory]
        return files + list(self._memory.values())

    def _exported(self) -> dict[str, tuple[str, ...]]:
        """dotted definition -> the names packages re-export it under."""
        indexes = self._indexes()
        by_module = {index.module: index for index in indexes}
        names: dict[str, set[str]] = {}
        for index in indexes:
            for name, origin in index.reexports.items():
                names.setdefault(_defined(origin, by_module), set()).add(f"{index.module}.{name}")
            for star in index.stars:
                for name in by_module[star].top_names() if star in by_module else []:
                    origin = _defined(f"{star}.{name}", by_module)
                    names.setdefault(origin, set()).add(f"{index.module}.{name}")
        return {origin: tuple(sorted(aliases)) for origin, aliases in names.items()}


def _defined(dotted: str, by_module: dict[str, _FileIndex]) -> str:
    """Where `module.name` is defined, followed through the re-exports of packages."""
    seen = set()
    while dotted not in seen:
        seen.add(dotted)
        module, _, name = dotted.rpartition(".")
        index = by_module.get(module)
        origin = None
        if index is not None:
            origin = index.reexports.get(name) or _from_star(index, name, by_module)
        if origin is None:
            return dotted
        dotted = origin
    return dotted


def _from_star(index: _FileIndex, name: str, by_module: dict[str, _FileIndex]) -> str | None:
    """`module.name` for the star import of `index` that binds `name` (None: none does, or
    the module defines the name itself)."""
    if any(d.qualname == name for d in index.definitions):
        return None
    return next(
        (f"{s}.{name}" for s in index.stars if s in by_module and name in by_module[s].top_names()),
        None,
    )


def _walk(folder: Path) -> list[str]:
    """Python sources under ``folder``, not following symlinks, skipping what is not code
    (hidden folders, caches, virtualenvs, build output, run records)."""
    found: list[str] = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIP_DIRS
            and not os.path.exists(os.path.join(current, d, "pyvenv.cfg"))
        ]
        found += [os.path.join(current, f) for f in files if f.endswith((".py", ".pyi"))]
    return found


def _flatten(module: str, entry: Entry, stub: bool) -> list[Definition]:
    out = [Definition(module, entry.qualname, entry.kind, entry.start, stub, entry)]
    for child in entry.children:
        out += _flatten(module, child, stub)
    return out


def _reexports(package: str, source: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """``name -> origin`` for a package's top-level ``from ... import name``, and the
    modules of its ``from ... import *``."""
    tree = parsed(source)
    found: dict[str, str] = {}
    stars: list[str] = []
    for node in tree.body if tree is not None else []:
        if not isinstance(node, ast.ImportFrom):
            continue
        origin = _absolute(package, node)
        for alias in node.names:
            if alias.name == "*" and origin:
                stars.append(origin)
            elif origin:
                found[alias.asname or alias.name] = f"{origin}.{alias.name}"
    return found, tuple(stars)


def _all(source: str) -> tuple[str, ...] | None:
    """A module's ``__all__`` when it is a literal list or tuple of strings, else None."""
    tree = parsed(source)
    found = None
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                return None
            found = (
                tuple(v for v in value if isinstance(v, str))
                if isinstance(value, (list, tuple))
                else None
            )
    return found


def _absolute(package: str, node: ast.ImportFrom) -> str:
    """The absolute module of a ``from`` import at the top of ``package``'s ``__init__``."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])]) if base else ""


_INDEXES: weakref.WeakKeyDictionary[Any, DefinitionIndex] = weakref.WeakKeyDictionary()


def definition_index(rt: Any, memory: list[tuple[str, str, str | None]]) -> DefinitionIndex:
    """The runtime's index, brought up to date (built on first use)."""
    from liveforge.tools._modules import layout

    index = _INDEXES.get(rt)
    if index is None or index.roots is not layout(rt):
        index = DefinitionIndex(layout(rt))
        _INDEXES[rt] = index
    index.refresh(memory)
    return index


# -- the index kept between processes -------------------------------------------------------

STORE = Path(".liveforge") / "index" / "definitions.json"
"""Where `stored_index` keeps a project's index, under the project's root."""

_FORMAT = 2  # raised whenever what is stored, or how files are outlined, changes


def stored_index(roots: ImportRoots, project_root: Path) -> DefinitionIndex:
    """The project's file index as the last process left it under `.liveforge/index/`,
    brought up to date (only changed files are read, and re-outlined only when their
    bytes changed) and stored again when anything changed.

    A command that starts cold (`liveforge find`) answers without outlining the project;
    a store that cannot be read or written only costs the time to rebuild."""
    index = DefinitionIndex(roots)
    store = project_root / STORE
    index._files = _load(store, _key(roots))
    index.refresh()
    if index.touched:
        _save(store, _key(roots), index._files)
    return index


def _key(roots: ImportRoots) -> list[Any]:
    """What the stored index is valid for: its format, the Python that outlined it, the
    import roots (a changed layout names modules differently)."""
    folders = sorted(str(p) for p in [*roots.packages.values(), *roots.paths])
    return [_FORMAT, list(sys.version_info[:2]), folders]


def _load(store: Path, key: list[Any]) -> dict[Path, _FileIndex]:
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
        if data.get("key") != key:
            return {}
        return {Path(row["path"]): _from_row(row) for row in data["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # none yet, or unreadable: rebuilt and stored again


def _save(store: Path, key: list[Any], files: dict[Path, _FileIndex]) -> None:
    rows = [_row(path, index) for path, index in files.items()]
    try:
        make_parent(store)  # `.liveforge/` made with its `.gitignore`: `git status` stays clean
        temporary = store.with_name(f"{store.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"key": key, "files": rows}), encoding="utf-8")
        os.replace(temporary, store)  # a reader sees the old store or the new, never half
    except OSError:
        pass  # a read-only project: the next command outlines the files again


def _row(path: Path, index: _FileIndex) -> dict[str, Any]:
    return {
        "path": str(path),
        "module": index.module,
        "stamp": list(index.stamp),
        "digest": index.digest,
        "stub": any(d.stub for d in index.definitions),
        "defs": [
            [d.qualname, d.kind, d.line, d.entry.end if d.entry else d.line]
            for d in index.definitions
            if d.qualname
        ],
        "reexports": index.reexports,
        "stars": list(index.stars),
        "public": list(index.public) if index.public is not None else None,
        "undecodable": index.undecodable,
        "unparsed": index.unparsed,
    }


def _from_row(row: dict[str, Any]) -> _FileIndex:
    module, stub, path = row["module"], bool(row["stub"]), row["path"]
    definitions = [Definition(module, "", "module", 1, stub)]
    for qualname, kind, line, end in row["defs"]:
        name = qualname.rpartition(".")[2]
        signature = functools.partial(_signature_in, path, qualname)
        entry = Entry(kind, name, qualname, line, end, signature_source=signature)
        definitions.append(Definition(module, qualname, kind, line, stub, entry))
    public = tuple(row["public"]) if row["public"] is not None else None
    stamp = (int(row["stamp"][0]), int(row["stamp"][1]))
    found = _FileIndex(
        module, stamp, definitions, dict(row["reexports"]), stars=tuple(row["stars"])
    )
    found.public, found.digest = public, row["digest"]
    _mark_undecodable(found, row["undecodable"])
    found.unparsed = row["unparsed"]
    return found


def _syntax_error(source: str) -> str:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # a null byte
        return str(exc)
    return ""


def source_text(data: bytes, path: Path) -> tuple[str, str]:
    """The text of a Python file's bytes in its encoding (coding cookie, BOM or UTF-8), and
    "" — or, for bytes that are not text in it, the text with replacement characters and
    what is wrong (the encoding and the first bad byte)."""
    if not any(b"coding" in line for line in data.split(b"\n", 2)[:2]):
        try:  # most files: UTF-8 and no coding cookie, read without looking further
            return data.decode("utf-8-sig"), ""
        except UnicodeDecodeError:
            pass
    from liveforge.kernel.errors import UndecodableSource
    from liveforge.kernel.files._sourcefile import decode_python

    try:
        return decode_python(data, str(path))[0], ""
    except UndecodableSource as exc:
        try:
            text = data.decode(exc.encoding, "replace")
        except LookupError:  # an unknown coding cookie
            text = data.decode("utf-8", "replace")
        return text, exc.reason


def _mark_undecodable(found: _FileIndex, problem: str) -> None:
    if problem:
        found.undecodable = problem
        found.definitions = [replace(d, undecodable=problem) for d in found.definitions]


def _signature_in(path: str, qualname: str) -> str:
    """The signature of `qualname` in the file at `path`, outlined when first shown."""
    try:
        source = source_text(Path(path).read_bytes(), Path(path))[0]
    except OSError:
        return ""
    entry = find_entry(outline(source), qualname.split("."))
    return entry.signature if entry is not None else ""
