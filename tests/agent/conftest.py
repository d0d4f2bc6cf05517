"""Fixtures for the agent tests: a fixture project on disk and a FakeProvider over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_support import fixture_project

from liveforge.testing import FakeProvider


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    with fixture_project(tmp_path / "project") as found:
        yield found


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server
