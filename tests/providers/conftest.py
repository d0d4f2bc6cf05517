"""Fixtures for provider tests: a running FakeProvider per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from liveforge.testing import FakeProvider


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    """A started FakeProvider with an empty script (tests add items)."""
    with FakeProvider() as server:
        yield server
