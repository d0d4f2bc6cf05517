"""Fixtures for kernel tests: real temporary modules on sys.path and a Runtime over them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_support import Project

from liveforge import Runtime


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    proj = Project(tmp_path)
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    yield proj
    for name in set(sys.modules) - before:
        if name.startswith(proj.prefix) or name.startswith("virt_"):
            del sys.modules[name]
    while str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


@pytest.fixture
def rt(project: Project) -> Iterator[Runtime]:
    runtime = Runtime(project_root=project.root)
    yield runtime
    runtime.close()
