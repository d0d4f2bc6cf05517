"""The definition index behind find: built once, kept current, stubs only where no source is."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from liveforge.kernel import Runtime
from liveforge.tools import using_runtime
from liveforge.tools._index import definition_index
from liveforge.tools._jedi import memory_sources
from liveforge.tools.intel import find

FILES = {
    "src/idxpkg/__init__.py": "from .core import window\nfrom idxpkg.extra import Chunker as Cut\n",
    "src/idxpkg/core.py": "def window(items, size=2):\n    return items[:size]\n",
    "src/idxpkg/core.pyi": "def window(items: list[int], size: int = ...) -> list[int]: ...\n",
    "src/idxpkg/extra.py": (
        "class Chunker:\n    def chunks(self, items):\n        return [items]\n\n\n"
        "async def fetch(url: str) -> bytes:\n    return b''\n"
    ),
    "src/idxpkg/_speed.pyi": "def fast(data: bytes) -> bytes: ...\n",
    ".venv/lib/site-packages/idxjunk.py": "def window():\n    pass\n",
    "sandbox_runs/r1/overlay/core.py": "def window():\n    pass\n",
}


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    for relative, text in FILES.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    runtime = Runtime(project_root=tmp_path)
    try:
        with using_runtime(runtime):
            yield runtime
    finally:
        runtime.close()
        sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]
        for name in [m for m in sys.modules if m.split(".")[0] == "idxpkg"]:
            del sys.modules[name]


def test_find_uses_source_over_stub_and_labels_stub_only_modules(rt: Runtime) -> None:
    """A .pyi next to its .py is ignored; a stub with no source is found and labelled."""
    assert find("window") == (
        "def idxpkg.core.window(items, size=2) :1 (exported as idxpkg.window)\n"
    )
    assert find("fast") == "def idxpkg._speed.fast(data: bytes) -> bytes :1 (stub: no source)\n"


def test_find_names_reexports_kinds_and_dotted_tails(rt: Runtime) -> None:
    """Re-exports under another name, async functions, methods by dotted tail, kind filter."""
    assert find("Chunker") == "class idxpkg.extra.Chunker :1 (exported as idxpkg.Cut)\n"
    assert find("Chunker.chunks") == "def idxpkg.extra.Chunker.chunks(items) :2\n"
    assert find("fetch", kind="function") == "async def idxpkg.extra.fetch(url: str) -> bytes :6\n"
    assert find("extra", kind="module") == "module idxpkg.extra :1\n"
    assert find("fetch", kind="class") == "no definitions named 'fetch' of kind class"
    with pytest.raises(ValueError, match="not a name or dotted tail"):
        find("window(")


def test_index_parses_each_file_once_and_follows_changes(rt: Runtime, tmp_path: Path) -> None:
    """The build parses every file once; later questions re-read only what changed, see
    patches in memory, new files and deleted ones."""
    index = definition_index(rt, memory_sources(rt))
    assert index.parsed_last == 4  # __init__, core.py, extra.py, _speed.pyi
    assert definition_index(rt, memory_sources(rt)).parsed_last == 0
    rt.patch("idxpkg.core.window", "def window(items, size=3, step=1):\n    return items\n")
    assert find("window").startswith("def idxpkg.core.window(items, size=3, step=1) :1")
    assert definition_index(rt, memory_sources(rt)).parsed_last == 0  # memory already indexed
    extra = tmp_path / "src/idxpkg/extra.py"
    extra.write_text("def window_size():\n    return 2\n")
    os.utime(extra, ns=(1, 1))
    (tmp_path / "src/idxpkg/later.py").write_text("class Later:\n    pass\n")
    assert find("window_size") == "def idxpkg.extra.window_size() :1\n"
    assert definition_index(rt, memory_sources(rt)).parsed_last == 0
    assert find("Later") == "class idxpkg.later.Later :1\n"
    (tmp_path / "src/idxpkg/later.py").unlink()
    assert find("Later") == "no definitions named 'Later'"
    rt.rollback()
    assert find("window").startswith("def idxpkg.core.window(items, size=2) :1")
