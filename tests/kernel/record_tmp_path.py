"""A pytest plugin (`-p record_tmp_path`) that records the `tmp_path` of every test using
one as a junit property, `tmp_path`: where a run's temporary folders went, readable after
the run from its junit XML."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _record_tmp_path(request: pytest.FixtureRequest) -> Iterator[None]:
    if "tmp_path" in request.fixturenames:
        path = request.getfixturevalue("tmp_path")
        request.node.user_properties.append(("tmp_path", str(path)))
    yield
