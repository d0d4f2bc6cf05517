"""Source tracking: which modules liveforge manages, their in-memory and on-disk source.

In-memory source is authoritative for `inspect.getsource`, tracebacks and `view_source`: it is
put in `linecache` (with mtime None, so `linecache.checkcache` never drops it) *before* any code
compiled from it runs. Virtual modules get a loader with `get_source`, so linecache can heal
if its cache is cleared.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import keyword
import linecache
import os
import sys
import threading
import types
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

from liveforge.kernel.errors import InvalidName, SecondModuleName
from liveforge.kernel.files._sourcefile import SourceFile, decode_python, read_source
from liveforge.kernel.source._roots import ImportRoots
from liveforge.kernel.source._stmts import Index

VIRTUAL_PREFIX = "<liveforge-virtual>/"


def virtual_filename(name: str, is_package: bool = False) -> str:
    """The pseudo filename of the virtual module `name`.

    Not of the `<...>` form: linecache refuses to ask a module's loader for the source of
    such names, and asking it is how the cache heals after `linecache.clearcache()`.
    """
    return VIRTUAL_PREFIX + name.replace(".", "/") + ("/__init__.py" if is_package else ".py")


def register_source(filename: str, source: str, lines: list[str] | None = None) -> None:
    """Make `source` what linecache (and so inspect and tracebacks) returns for `filename`;
    `lines` is the source already split (by `_stmts.split_lines`), which nobody changes."""
    if lines is None:
        lines = source.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
    linecache.cache[filename] = (len(source), None, lines, filename)


class VirtualLoader(importlib.abc.InspectLoader):
    """Loader of modules that exist only in memory; serves their current source."""

    def __init__(self, registry: ModuleRegistry) -> None:
        self._registry = registry

    def get_source(self, fullname: str) -> str | None:
        record = self._registry.get(fullname)
        return record.source if record is not None else None

    def is_package(self, fullname: str) -> bool:
        record = self._registry.get(fullname)
        return bool(record and record.is_package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        raise ImportError(
            f"virtual module {module.__name__!r} is created by the runtime, not imported"
        )


@dataclass
class ModuleRecord:
    """What the runtime knows of one managed module."""

    name: str
    filename: str
    source: str
    #: the file as liveforge last read or wrote it (text, encoding, newlines, mode,
    #: fingerprint); None for virtual modules.
    loaded: SourceFile | None
    is_package: bool = False
    virtual: bool = False
    #: False when the running code may predate `source`: the module was imported before
    #: liveforge watched its folder and its file was read later (it may have changed since).
    baseline_known: bool = True
    #: ids of applied changes not yet persisted, oldest first.
    change_ids: list[str] = field(default_factory=list)
    #: statement index of `source`, built on first patch.
    index: Index | None = None
    #: texts of statements that read a name a change rebound after they ran, and were not
    #: run again (a note named each); a reload runs them again.
    stale: set[str] = field(default_factory=set)

    @property
    def disk_source(self) -> str | None:
        """The file's text as last read or written (None for virtual modules)."""
        return self.loaded.text if self.loaded is not None else None

    @property
    def dirty(self) -> bool:
        """True when the in-memory source differs from the file (always, for virtual modules)."""
        return self.virtual or self.source != self.disk_source


class ModuleRegistry:
    """The managed modules of one runtime, by dotted name."""

    def __init__(self) -> None:
        self._records: dict[str, ModuleRecord] = {}
        self.loader = VirtualLoader(self)

    def get(self, name: str) -> ModuleRecord | None:
        """The record of `name`, or None when the module is not managed yet."""
        return self._records.get(name)

    def records(self) -> list[ModuleRecord]:
        """Every managed module, sorted by name."""
        return [self._records[name] for name in sorted(self._records)]

    def dirty(self) -> list[ModuleRecord]:
        """Modules whose in-memory source differs from disk (virtual ones included)."""
        return [r for r in self.records() if r.dirty]

    def track(self, module: types.ModuleType) -> ModuleRecord:
        """The record of a loaded module, created from its file on first use."""
        record = self._records.get(module.__name__)
        if record is not None:
            return record
        filename = getattr(module, "__file__", None)
        if not filename or not filename.endswith(".py") or not os.path.exists(filename):
            raise ValueError(f"module {module.__name__!r} has no Python source file")
        first = second_name(module.__name__, filename, _capture.layouts)
        if first is not None:
            raise SecondModuleName(module.__name__, first, os.path.realpath(filename))
        source, known = loaded_source(filename)
        record = ModuleRecord(
            name=module.__name__,
            filename=filename,
            source=source,
            loaded=read_source(filename),
            is_package=hasattr(module, "__path__"),
            baseline_known=known,
        )
        self._records[record.name] = record
        return record

    def add_virtual(self, name: str, source: str, *, is_package: bool) -> ModuleRecord:
        """Record a module that exists only in memory."""
        record = ModuleRecord(
            name=name,
            filename=virtual_filename(name, is_package),
            source=source,
            loaded=None,
            is_package=is_package,
            virtual=True,
        )
        self._records[name] = record
        return record

    def forget(self, name: str) -> None:
        """Stop managing `name` (a virtual module rolled back out of existence, or a module
        whose file could not be indexed)."""
        record = self._records.pop(name, None)
        if record is not None and record.virtual:
            linecache.cache.pop(record.filename, None)

    def make_virtual_module(self, name: str, *, is_package: bool) -> types.ModuleType:
        """A new, empty module object for a virtual module (not yet in sys.modules)."""
        filename = virtual_filename(name, is_package)
        spec = importlib.machinery.ModuleSpec(
            name, self.loader, origin=filename, is_package=is_package
        )
        spec.has_location = False
        module = importlib.util.module_from_spec(spec)
        module.__file__ = filename
        if is_package:
            module.__path__ = []
        return module


class _CapturingLoader(importlib.machinery.SourceFileLoader):
    """Compiles from the source text (never a stale .pyc) and remembers that text."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        source = decode_python(self.get_data(path), path)[0]
        LOADED_SOURCES[path] = source
        return compile(source, path, "exec", dont_inherit=True)


class SourceCapture(importlib.abc.MetaPathFinder):
    """Remembers the exact source text of modules imported from under the given roots, so
    a module tracked after its file changed on disk still knows what it is running; and
    refuses to import a project file under a second module name (see `second_name`)."""

    def __init__(self) -> None:
        # Replaced, never changed in place: an import in another thread reads them.
        self.roots: frozenset[str] = frozenset()
        self.layouts: list[ImportRoots] = []
        #: (root, layout, owner) of each request; a dead owner's request has lapsed.
        self.requests: list[tuple[str, ImportRoots | None, weakref.ref[object] | None]] = []

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None and "." not in fullname:
            return None  # a tool (jedi) asking by short name inside a package, not an import
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)  # type: ignore[arg-type]
        origin = spec.origin if spec is not None else None
        if spec is None or not origin or not origin.endswith(".py"):
            return None
        real = os.path.realpath(origin)
        if not any(o.startswith(r) for r in self.roots for o in (origin, real)):
            return None
        first = second_name(fullname, origin, self.layouts)
        if first is not None:
            raise SecondModuleName(fullname, first, real)
        spec.loader = _CapturingLoader(fullname, origin)
        return spec


def second_name(name: str, filename: str, layouts: Iterable[ImportRoots] = ()) -> str | None:
    """The module `filename` already is, when that is not `name`: the name a loaded module
    has for the same file, or the name of the mapped package the file lies in."""
    real = os.path.realpath(filename)
    for layout in layouts:
        mapped = layout.mapped(real)
        if mapped is not None and mapped != name:
            return mapped
    base = os.path.basename(real)
    itself = sys.modules.get(name)
    for other, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if other == name or other in _SCRIPTS or module is itself or not isinstance(file, str):
            continue  # one module object under two keys (os.path) is still one module
        if file == filename or (file.endswith(base) and os.path.realpath(file) == real):
            return other
    return None


_SCRIPTS = frozenset({"__main__", "__mp_main__"})  # Python itself runs a script as these
LOADED_SOURCES: dict[str, str] = {}
_capture = SourceCapture()
_capture_lock = threading.Lock()


def capture_sources_under(
    root: str, layout: ImportRoots | None = None, owner: object | None = None
) -> None:
    """Start remembering the source of modules imported from under `root`; with `layout`,
    also refuse to import its files under names other than their own. With `owner` (a
    runtime), for as long as the owner exists: what owners since gone asked for is dropped
    at the next call, so a long-lived process that makes many runtimes (over temporary
    projects, say) does not keep the roots and layouts of every one."""
    with _capture_lock:
        requests = [r for r in _capture.requests if r[2] is None or r[2]() is not None]
        owned = None if owner is None else weakref.ref(owner)
        requests.append((os.path.join(root, ""), layout, owned))
        layouts: list[ImportRoots] = []
        for _, known, _ in requests:
            if known is not None and all(other.root != known.root for other in layouts):
                layouts.append(known)
        _capture.requests = requests
        _capture.roots = frozenset(key for key, _, _ in requests)
        _capture.layouts = layouts
        if _capture not in sys.meta_path:
            sys.meta_path.insert(0, _capture)


def loaded_source(filename: str) -> tuple[str, bool]:
    """The source the module's code was compiled from, and whether that is certain: the text
    captured at import, else linecache's pinned copy (mtime None), else — uncertain — the
    file as it is now."""
    if filename in LOADED_SOURCES:
        return LOADED_SOURCES[filename], True
    entry = linecache.cache.get(filename)
    if entry is not None and len(entry) == 4 and entry[1] is None:
        return "".join(entry[2]), True
    return read_source(filename).text, False


def check_module_name(name: object, what: str = "module name") -> str:
    """`name` when it is a dotted module name (or path); `InvalidName` otherwise."""
    if not isinstance(name, str) or not all(
        part.isidentifier() and not keyword.iskeyword(part) for part in name.split(".")
    ):
        raise InvalidName(str(name), what=what)
    return name


def quiet_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of module `name`, found the way an import finds it but without executing
    any parent package (one that fails to import still shows its submodules); None when no
    finder knows it."""
    spec: importlib.machinery.ModuleSpec | None = None
    locations: list[str] | None = None
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        dotted = ".".join(parts[:depth])
        loaded = sys.modules.get(dotted)
        if loaded is not None and getattr(loaded, "__spec__", None) is not None:
            spec = loaded.__spec__
        else:
            spec = _first_spec(dotted, locations)
            _refuse_mapped(dotted, spec)
        if spec is None:
            return None
        locations = list(spec.submodule_search_locations or [])
        if depth < len(parts) and not locations:
            return None  # a plain module has no submodules
    return spec


def _refuse_mapped(name: str, spec: importlib.machinery.ModuleSpec | None) -> None:
    """Raise SecondModuleName when `spec` finds a file of a mapped package under `name`."""
    origin = spec.origin if spec is not None and spec.has_location else None
    for layout in _capture.layouts if origin else ():
        mapped = layout.mapped(origin or "")
        if mapped is not None and mapped != name:
            raise SecondModuleName(name, mapped, os.path.realpath(origin or ""))


def _first_spec(name: str, path: list[str] | None) -> importlib.machinery.ModuleSpec | None:
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_spec", None)
        if find is None or isinstance(finder, SourceCapture):
            continue  # the capture only wraps PathFinder's answer, which comes next
        try:
            spec = find(name, path)
        except SecondModuleName:
            raise
        except (ImportError, ValueError, AttributeError, TypeError, KeyError):
            continue  # KeyError: a namespace sub-package wants its parent imported
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


def module_file(name: str) -> str | None:
    """The file module `name` is or would be loaded from, found without importing anything."""
    module = sys.modules.get(name)
    if module is not None:
        file = getattr(module, "__file__", None)
        return file if isinstance(file, str) else None
    spec = quiet_spec(name)
    return spec.origin if spec is not None and spec.has_location else None


def importable(name: str) -> bool:
    """True when module `name` can be found (importing its parent packages if need be)."""
    try:
        return importlib.util.find_spec(name) is not None
    except SecondModuleName:
        raise
    except (ImportError, ValueError, AttributeError):
        return False
