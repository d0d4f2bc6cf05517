"""The model providers liveforge knows by name, and how a provider is described.

`ProviderConfig` says how to reach one provider (protocol, address, the environment
variables holding its keys); `BUILTIN_PROVIDERS` are the ones a model name may use without
configuration ("anthropic:claude-sonnet-4-5", "ollama:llama3.1", ...); projects add their
own under `[tool.liveforge.providers.NAME]` (see `liveforge.config`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["BUILTIN_PROVIDERS", "DEFAULT_MODEL", "ProviderConfig", "parse_model"]

DEFAULT_MODEL = "anthropic:claude-sonnet-4-5"


class ProviderConfig(BaseModel):
    """How to reach one provider."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    protocol: Literal["anthropic", "openai", "gemini"]
    """Wire protocol: "anthropic" (Messages API), "openai" (chat completions) or "gemini"."""
    base_url: str
    """Anthropic and Gemini: the host root; OpenAI-compatible: up to and including /v1.
    `${VAR}` parts are read from the environment when the model is used."""
    api_key_env: list[str] = Field(default_factory=list)
    """Environment variables holding API keys, tried in this order."""
    key_required: bool = True
    """False for local servers that accept requests without a key."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers (not for secrets)."""
    key_header: str | None = None
    """Header carrying the key as is, instead of the protocol's own (Azure: "api-key")."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://", "${")):
            raise ValueError("expected an http:// or https:// URL (or one starting with ${VAR})")
        return value.rstrip("/")


def _hosted(base_url: str, key_env: str) -> ProviderConfig:
    return ProviderConfig(protocol="openai", base_url=base_url, api_key_env=[key_env])


BUILTIN_PROVIDERS: dict[str, ProviderConfig] = {
    "anthropic": ProviderConfig(
        protocol="anthropic",
        base_url="https://api.anthropic.com",
        api_key_env=["ANTHROPIC_API_KEY"],
    ),
    "openai": ProviderConfig(
        protocol="openai", base_url="https://api.openai.com/v1", api_key_env=["OPENAI_API_KEY"]
    ),
    "ollama": ProviderConfig(
        protocol="openai", base_url="http://localhost:11434/v1", key_required=False
    ),
    "vllm": ProviderConfig(
        protocol="openai",
        base_url="http://localhost:8000/v1",
        api_key_env=["VLLM_API_KEY"],
        key_required=False,
    ),
    "lmstudio": ProviderConfig(
        protocol="openai", base_url="http://localhost:1234/v1", key_required=False
    ),
    "llamacpp": ProviderConfig(
        protocol="openai", base_url="http://localhost:8080/v1", key_required=False
    ),
    "gemini": ProviderConfig(
        protocol="gemini",
        base_url="https://generativelanguage.googleapis.com",
        api_key_env=["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    ),
    "azure": ProviderConfig(
        protocol="openai",
        base_url="${AZURE_OPENAI_ENDPOINT}/openai/v1",
        api_key_env=["AZURE_OPENAI_API_KEY"],
        key_header="api-key",
    ),
    "openai-compatible": ProviderConfig(
        protocol="openai",
        base_url="${OPENAI_COMPATIBLE_BASE_URL}",
        api_key_env=["OPENAI_COMPATIBLE_API_KEY"],
        key_required=False,
    ),
    "openrouter": _hosted("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": _hosted("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": _hosted("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": _hosted("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "together": _hosted("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "xai": _hosted("https://api.x.ai/v1", "XAI_API_KEY"),
}


def parse_model(name: str) -> tuple[str, str]:
    """Split "provider:model" into (provider, model); ValueError naming the form."""
    provider, sep, model = name.partition(":")
    if not sep or not provider or not model:
        raise ValueError(f"expected 'provider:model' (e.g. '{DEFAULT_MODEL}'), got {name!r}")
    return provider, model
