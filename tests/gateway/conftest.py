"""Fixtures every gateway test shares: a fake model provider on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from liveforge.testing import FakeProvider


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server
