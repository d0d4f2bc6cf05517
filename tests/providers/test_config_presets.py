"""Provider presets: Gemini, Azure OpenAI and any OpenAI-compatible endpoint from config."""

from __future__ import annotations

from pathlib import Path

import pytest
from provider_support import provider, request, stream_response

from liveforge.config import load_config
from liveforge.declarations.provider import Route
from liveforge.kernel.errors import ConfigError
from liveforge.testing import FakeProvider, reply


def _routes(tmp_path: Path, model: str, env: dict[str, str]) -> list[Route]:
    return load_config(tmp_path, env={**env, "LIVEFORGE_MODEL": model}).routes(env)


def test_gemini_preset_reads_either_google_key_variable(tmp_path: Path) -> None:
    """gemini:MODEL uses the Gemini protocol at Google's host with GEMINI_API_KEY first."""
    env = {"GEMINI_API_KEY": "AIza-one", "GOOGLE_API_KEY": "AIza-two"}
    (route,) = _routes(tmp_path, "gemini:gemini-2.5-flash", env)
    assert (route.protocol, route.model) == ("gemini", "gemini-2.5-flash")
    assert route.base_url == "https://generativelanguage.googleapis.com"
    assert [c.name for c in route.credentials] == ["GEMINI_API_KEY", "GOOGLE_API_KEY"]


def test_azure_preset_reaches_the_deployment_with_an_api_key_header(tmp_path: Path) -> None:
    """azure:DEPLOYMENT goes to ENDPOINT/openai/v1 and sends the key as `api-key`."""
    with FakeProvider([reply.text("from azure")]) as fake:
        env = {"AZURE_OPENAI_ENDPOINT": fake.base_url + "/", "AZURE_OPENAI_API_KEY": "az-key-9876"}
        (route,) = _routes(tmp_path, "azure:my-gpt4o", env)
        assert route.base_url == fake.base_url + "/openai/v1"
        assert stream_response(provider(route), request()).text == "from azure"
    sent = fake.requests[-1]
    assert sent.path == "/openai/v1/chat/completions"
    assert sent.headers["api-key"] == "<redacted>" and "authorization" not in sent.headers
    assert sent.key_suffix == "9876" and sent.body["model"] == "my-gpt4o"


def test_a_missing_endpoint_variable_is_named(tmp_path: Path) -> None:
    """Without AZURE_OPENAI_ENDPOINT the error names it and the whole-URL alternative."""
    with pytest.raises(ConfigError, match=r"AZURE_OPENAI_ENDPOINT.*AZURE_BASE_URL"):
        _routes(tmp_path, "azure:dep", {"AZURE_OPENAI_API_KEY": "k"})


def test_a_missing_url_variable_that_is_the_whole_url_is_named_once(tmp_path: Path) -> None:
    """openai-compatible's URL variable is itself the whole-URL override: the error says to
    set it, once, with no alternative that names the same variable."""
    with pytest.raises(ConfigError) as error:
        _routes(tmp_path, "openai-compatible:qwen", {})
    message = str(error.value)
    assert message.endswith("; set OPENAI_COMPATIBLE_BASE_URL.")
    assert "whole URL" not in message


def test_openai_compatible_preset_and_project_defined_url_variables(tmp_path: Path) -> None:
    """openai-compatible: needs only its URL; a project provider may use ${VAR} too."""
    (tmp_path / "liveforge.toml").write_text(
        '[providers.lab]\nprotocol = "openai"\nbase_url = "${LAB_HOST}/v1"\nkey_required = false\n'
    )
    env = {"OPENAI_COMPATIBLE_BASE_URL": "http://box:9000/v1/", "LAB_HOST": "http://lab:8000"}
    (route,) = _routes(tmp_path, "openai-compatible:qwen", env)
    assert (route.protocol, route.base_url) == ("openai", "http://box:9000/v1")
    assert route.credentials == []
    (lab,) = _routes(tmp_path, "lab:m", env)
    assert lab.base_url == "http://lab:8000/v1"
