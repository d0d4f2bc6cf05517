"""Fixtures shared by the test folders: a fresh copy of the demo's sample project, a copy of
liveforge's own source tree to build from; and the order the tests run in."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import liveforge
from liveforge.demo import SAMPLE_DIR

#: the source tree liveforge runs from (a checkout: tests run from one)
CHECKOUT = Path(liveforge.__file__).resolve().parent.parent


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A private copy of the sample project (pricing package with one bug, and its tests)."""
    target = tmp_path / "shop"
    shutil.copytree(SAMPLE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture(scope="session")
def checkout_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of liveforge's source tree to build or install from: building in the checkout
    leaves `build/` there, whose files (a module since moved or deleted among them) go into
    every later wheel built from it. The copy holds what git lists, tracked or new, and no
    ignored file (virtualenvs, build output, caches); without git, the tree less those."""
    copy = tmp_path_factory.mktemp("checkout") / "liveforge-src"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=CHECKOUT,
        capture_output=True,
    )
    if listed.returncode != 0:
        junk = shutil.ignore_patterns(
            ".git", ".venv*", ".ci-*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
        )
        shutil.copytree(CHECKOUT, copy, symlinks=True, ignore=junk)
        return copy
    for name in listed.stdout.decode().split("\0"):
        source = CHECKOUT / name
        if not name or not (source.exists() or source.is_symlink()):
            continue  # deleted from the tree, not yet from git's index
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    return copy


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
