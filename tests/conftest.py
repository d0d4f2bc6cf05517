"""Fixtures shared by the test folders: a fresh copy of the demo's sample project; and the
order the tests run in."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from liveforge.demo import SAMPLE_DIR


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A private copy of the sample project (pricing package with one bug, and its tests)."""
    target = tmp_path / "shop"
    shutil.copytree(SAMPLE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture
def marked() -> Callable[[str], set[int]]:
    """`marked(marker)`: the pids of running `sleep MARKER` processes, found by their
    command line (a check in a pid namespace of its own cannot tell its pids)."""

    def find(marker: str) -> set[int]:
        pids = set()
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    argv = Path(f"/proc/{name}/cmdline").read_text().split("\0")
                except OSError:
                    continue
                if argv[0].endswith("sleep") and marker in argv:
                    pids.add(int(name))
        return pids

    return find


#: Tests whose cost grows with the heap of the process running them: the kernel's searches
#: of the heap (`gc.get_referrers`) on the paths that write notes, and its passes over
#: `sys.modules`. Run first, each xdist worker runs them before earlier tests have grown it.
_HEAP_BOUND = ("tests/kernel/live/test_random_edits.py::",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(_HEAP_BOUND))
