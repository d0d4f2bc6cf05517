"""Configuration: environment variables plus `[tool.liveforge]` / `liveforge.toml`.

Sources, later ones winning: defaults, `[tool.liveforge]` in the project's pyproject.toml,
the project's `liveforge.toml` (same keys, at top level), environment variables. Every
value is validated; a bad one raises `ConfigError` naming the key and the expected form.

Models are named "provider:model":

    anthropic:claude-sonnet-4-5    Anthropic Messages API  (ANTHROPIC_API_KEY)
    openai:gpt-4o                  OpenAI chat completions (OPENAI_API_KEY)
    gemini:gemini-2.5-flash        Gemini API (GEMINI_API_KEY or GOOGLE_API_KEY)
    azure:DEPLOYMENT               Azure OpenAI v1 API at ${AZURE_OPENAI_ENDPOINT}/openai/v1
                                   (AZURE_OPENAI_API_KEY, sent as `api-key`)
    openai-compatible:MODEL        any chat-completions server at ${OPENAI_COMPATIBLE_BASE_URL}
                                   (OPENAI_COMPATIBLE_API_KEY if it wants one)
    openrouter:, groq:, deepseek:, mistral:, together:, xai:   hosted OpenAI-compatible APIs
                                   (OPENROUTER_API_KEY, GROQ_API_KEY, ...)
    ollama:llama3.1                Ollama, OpenAI-compatible at http://localhost:11434/v1
    vllm:Qwen/Qwen2.5-7B           vLLM at http://localhost:8000/v1
    lmstudio:qwen2.5-7b            LM Studio at http://localhost:1234/v1
    llamacpp:any                   llama.cpp's llama-server at http://localhost:8080/v1
    NAME:model                     a provider you define under [tool.liveforge.providers.NAME]

A `base_url` may name environment variables as `${VAR}`; they are filled in when the model is
used, and a missing one is reported with its name.

Example pyproject.toml::

    [tool.liveforge]
    model = "anthropic:claude-sonnet-4-5"
    fallback_models = ["openai:gpt-4o", "ollama:llama3.1"]

    [tool.liveforge.providers.work-vllm]
    protocol = "openai"
    base_url = "http://gpu-box:8000/v1"
    api_key_env = ["WORK_VLLM_KEY"]

    [tool.liveforge.retry]
    max_attempts = 5

    [tool.liveforge.permissions]
    mode = "auto-edit"
    deny = ["execute"]

Secrets come from the environment only, never from files: each provider reads the
variables listed in its `api_key_env` (built-ins: ANTHROPIC_API_KEY / OPENAI_API_KEY, plus
comma-separated extra keys in ANTHROPIC_API_KEYS / OPENAI_API_KEYS). Keys are held as
SecretStr and never appear in reprs, logs or errors; each holds the kernel's one copy of the
key (`kernel._secrets.hold`), which a live check's fork overwrites before its snippet runs.
Loading the configuration registers the keys of its configured providers as secrets, so
sandbox runs never get the variables holding them. Other environment variables:
LIVEFORGE_MODEL, LIVEFORGE_FALLBACK_MODELS (comma-separated), and NAME_BASE_URL for any
provider NAME (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GEMINI_BASE_URL, OLLAMA_BASE_URL, ...).
"""

from __future__ import annotations

import difflib
import os
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from liveforge.check_config import CheckConfig, SandboxConfig
from liveforge.config_files import ENV_KEYS, read_tables
from liveforge.declarations.agent import AgentSettings
from liveforge.declarations.compaction import ContextSettings
from liveforge.declarations.permissions import Mode, Policy, Rules
from liveforge.declarations.provider import Credential, Provider, RetryPolicy, Route
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.gateway.settings import GatewaySettings, ScheduleEntry
from liveforge.kernel.boundary._secrets import hold, register_secrets
from liveforge.kernel.errors import ConfigError
from liveforge.model_catalog import (
    BUILTIN_PROVIDERS,
    DEFAULT_MODEL,
    ProviderConfig,
    parse_model,
)

__all__ = [
    "LiveforgeConfig",
    "PermissionsConfig",
    "ProviderConfig",
    "SandboxConfig",
    "build_provider",
    "load_config",
    "parse_model",
]


class PermissionsConfig(BaseModel):
    """`[tool.liveforge.permissions]`: which tool calls run, ask first, or are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Mode | None = None
    """read-only, ask, auto-edit or full-auto; unset: the front end's default (ask)."""
    allow: list[str] = Field(default_factory=list)
    """Tools that run without asking, whatever the mode; ``"unbounded"``: shell commands
    outside the check boundary (a tool's own name does not cover those)."""
    ask: list[str] = Field(default_factory=list)
    """Tools that ask first (unless denied or allowed)."""
    deny: list[str] = Field(default_factory=list)
    """Tools that never run; wins over `allow`."""

    def policy(self, mode: Mode | None = None) -> Policy:
        """The policy: `mode` if given (a command-line choice), else the configured one."""
        rules = Rules(allow=tuple(self.allow), ask=tuple(self.ask), deny=tuple(self.deny))
        return Policy(mode=mode or self.mode or "ask", rules=rules)


class LiveforgeConfig(CheckConfig):
    """The validated `[tool.liveforge]` table (with `CheckConfig`'s keys: `sandbox`,
    `allow_paths`, `outside_project`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str = DEFAULT_MODEL
    """The primary model, "provider:model"."""
    fallback_models: list[str] = Field(default_factory=list)
    """Models tried in order when the primary is unavailable."""
    max_tokens: int = Field(default=8192, gt=0)
    """Output token limit per model call."""
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    """Provider definitions, merged over the built-ins (anthropic, openai, ollama, ...)."""
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    """Retries, backoff, key cooldowns and timeouts."""
    agent: AgentSettings | None = None
    """The agent loop: step limit, runaway detection, tool timeout, self-patch tests
    (`[tool.liveforge.agent]`)."""
    context: ContextSettings | None = None
    """Context window and compaction (`[tool.liveforge.context]`)."""
    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    """Permission mode and per-tool rules (`[tool.liveforge.permissions]`)."""
    gateway: GatewaySettings | None = None
    """`liveforge serve`: approvals and the Telegram channel (`[tool.liveforge.gateway]`)."""
    schedule: list[ScheduleEntry] = Field(default_factory=list)
    """Scheduled runs of the gateway (`[[tool.liveforge.schedule]]`)."""
    tools: ToolSettings = Field(default_factory=ToolSettings)
    """Tool profile, allow/deny lists and groups, and the file, shell and memory tools'
    settings (`[tool.liveforge.tools]`)."""

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        parse_model(value)
        return value

    @field_validator("fallback_models")
    @classmethod
    def _fallbacks(cls, value: list[str]) -> list[str]:
        for name in value:
            parse_model(name)
        return value

    def agent_settings(self) -> AgentSettings:
        """The agent loop's settings: `[agent]`, with the top-level `max_tokens` unless
        `[agent]` sets its own."""
        if self.agent is None:
            return AgentSettings(max_tokens=self.max_tokens)
        if "max_tokens" in self.agent.model_fields_set:
            return self.agent
        return self.agent.model_copy(update={"max_tokens": self.max_tokens})

    def provider(self, name: str) -> ProviderConfig:
        """The definition of provider `name` (configured, else built in)."""
        found = self.providers.get(name) or BUILTIN_PROVIDERS.get(name)
        if found is None:
            known = sorted({*BUILTIN_PROVIDERS, *self.providers})
            raise ConfigError(
                f"unknown provider {name!r} in model names; known: "
                f"{', '.join(known)}. Define it under "
                f"[tool.liveforge.providers.{name}].",
                key="model",
            )
        return found

    def routes(self, env: Mapping[str, str] | None = None) -> list[Route]:
        """The failover chain as Routes, keys read from `env` (default os.environ)."""
        env = os.environ if env is None else env
        return [self._route(name, env) for name in [self.model, *self.fallback_models]]

    def _route(self, name: str, env: Mapping[str, str]) -> Route:
        provider_name, model = parse_model(name)
        spec = self.provider(provider_name)
        credentials = _credentials(provider_name, spec, env)
        if spec.key_required and not credentials:
            names = " or ".join(spec.api_key_env) or "an api_key_env variable"
            raise ConfigError(
                f"model {name!r} needs an API key: set {names} in the environment.",
                key=f"providers.{provider_name}.api_key_env",
            )
        override = f"{provider_name.upper().replace('-', '_')}_BASE_URL"
        base_url = _expand(env.get(override) or spec.base_url, name, override, env)
        return Route(
            name=name,
            protocol=spec.protocol,
            model=model,
            base_url=base_url.rstrip("/"),
            credentials=credentials,
            extra_headers=dict(spec.headers),
            key_header=spec.key_header,
        )


def _expand(base_url: str, model: str, override: str, env: Mapping[str, str]) -> str:
    """`base_url` with each `${VAR}` read from `env`; ConfigError naming a missing one."""

    def value(match: re.Match[str]) -> str:
        var = match.group(1)
        if not env.get(var):
            whole = "" if var == override else f", or set {override} to the whole URL"
            raise ConfigError(
                f"model {model!r} needs {var} in the environment (its base URL is "
                f"{base_url!r}); set {var}{whole}.",
                key=var,
            )
        return env[var].rstrip("/")

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", value, base_url)


def _credentials(provider: str, spec: ProviderConfig, env: Mapping[str, str]) -> list[Credential]:
    # `hold`: keys under any variable name are scrubbed everywhere and kept from sandbox
    # runs, and the SecretStr keeps the kernel's copy, which a live check's fork overwrites
    found: list[Credential] = []
    for var in spec.api_key_env:
        if env.get(var):
            found.append(Credential(name=var, key=SecretStr(hold(env[var]))))
    extra_var = f"{provider.upper().replace('-', '_')}_API_KEYS"
    extras = [k.strip() for k in env.get(extra_var, "").split(",") if k.strip()]
    found += [
        Credential(name=f"{extra_var}[{i}]", key=SecretStr(hold(k))) for i, k in enumerate(extras)
    ]
    return found


def _hold_provider_keys(config: LiveforgeConfig, env: Mapping[str, str]) -> None:
    """Register the keys of every configured provider found in `env` as secrets, under
    whatever variable names they come, also when no model call builds its routes (a
    one-shot `verify`): sandbox runs do not get them, and a live check's fork blanks them."""
    for spec in config.providers.values():
        for var in spec.api_key_env:
            value = env.get(var, "")
            register_secrets([value, *(part.strip() for part in value.split(","))])


def _keys_at(loc: list[str]) -> list[str]:
    """The keys the configuration table at `loc` takes (a dict's key or a list's index in
    `loc` steps into its values)."""
    current: Any = LiveforgeConfig
    for part in loc:
        model = _model_in(current)
        if model is not None:
            field = model.model_fields.get(part)
            if field is None:
                return []
            current = field.annotation
        else:
            args = [a for a in typing.get_args(current) if a is not type(None)]
            current = args[-1] if args else None
    model = _model_in(current)
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The configuration model `annotation` names (alone or in `X | None`)."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _describe(error: ValidationError, files: dict[str, str], from_env: set[str]) -> ConfigError:
    """The first validation problem under its key, and where the user wrote it: the
    environment variable, or the file (`files` maps dotted keys to the file setting them)."""
    first = error.errors()[0]
    loc = [str(p) for p in first["loc"]]
    paths = [".".join(loc[:n]) for n in range(len(loc), 0, -1)]  # the deepest key first
    source = next((files[p] for p in paths if p in files), "pyproject.toml")
    if loc and loc[0] in from_env:
        key, where = ENV_KEYS[loc[0]], ""
    else:
        key = ".".join(["tool.liveforge", *loc])
        where = (
            f" (`{'.'.join(loc)}` in liveforge.toml)"
            if source == "liveforge.toml"
            else " (in pyproject.toml)"
        )
    given = first.get("input")
    shown = "" if isinstance(given, dict) else f" (got {given!r})"
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        close = difflib.get_close_matches(loc[-1], _keys_at(loc[:-1]), n=1, cutoff=0.6)
        message = (
            f"unknown key; did you mean `{close[0]}`?"
            if close
            else "unknown key; check the spelling against liveforge.config"
        )
    more = (
        f" ({len(error.errors()) - 1} more problem(s) after this one)"
        if len(error.errors()) > 1
        else ""
    )
    return ConfigError(f"bad configuration value {key}{where}: {message}{shown}.{more}", key=key)


def load_config(
    project_root: str | Path = ".", env: Mapping[str, str] | None = None
) -> LiveforgeConfig:
    """Read and validate the configuration of the project at `project_root`."""
    env = os.environ if env is None else env
    data, files, from_env = read_tables(Path(project_root), env)
    try:
        config = LiveforgeConfig.model_validate(data)
    except ValidationError as exc:
        raise _describe(exc, files, from_env) from None
    _hold_provider_keys(config, env)
    return config


def build_provider(config: LiveforgeConfig, env: Mapping[str, str] | None = None) -> Provider:
    """A ready Provider for the configured failover chain."""
    import liveforge.impls  # noqa: F401  (registers the Provider bodies)

    return Provider(config.routes(env), retry=config.retry)
