"""Fixtures every gateway test shares: a fake model provider on loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from liveforge.testing import FakeProvider


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go: LIVEFORGE_SCREENSHOTS when set (kept as the run's artefacts),
    else the test's temporary folder."""
    folder = Path(os.environ.get("LIVEFORGE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
