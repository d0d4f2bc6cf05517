"""Review findings in the providers, each pinned by a test that failed before its fix."""

from __future__ import annotations

import socket

import pytest
from provider_support import FAST, collect, provider, request, run

from liveforge.declarations.provider import Route
from liveforge.declarations.provider_errors import ProviderConnectionError

ONE_TRY = FAST.model_copy(update={"max_attempts": 1})


def test_connection_error_names_the_base_url_variable_of_its_provider() -> None:
    """An unreachable Anthropic server points at ANTHROPIC_BASE_URL, not OPENAI_BASE_URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    route = Route(
        name="anthropic:claude-x",
        protocol="anthropic",
        model="claude-x",
        base_url=f"http://127.0.0.1:{port}",
    )
    with pytest.raises(ProviderConnectionError) as info:
        run(collect(provider(route, retry=ONE_TRY), request()))
    assert "ANTHROPIC_BASE_URL" in str(info.value)
    assert "OPENAI_BASE_URL" not in str(info.value)
