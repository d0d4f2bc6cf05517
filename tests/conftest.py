"""Fixtures shared by the test folders: a fresh copy of the demo's sample project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from liveforge.demo import SAMPLE_DIR


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A private copy of the sample project (pricing package with one bug, and its tests)."""
    target = tmp_path / "shop"
    shutil.copytree(SAMPLE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target
