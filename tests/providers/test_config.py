"""Configuration from pyproject.toml, liveforge.toml and the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from liveforge.config import build_provider, load_config, parse_model
from liveforge.kernel.errors import ConfigError

KEYS = {"ANTHROPIC_API_KEY": "sk-ant-secret-aaaa", "OPENAI_API_KEY": "sk-oa-secret-bbbb"}


def _project(tmp_path: Path, pyproject: str = "", liveforge_toml: str | None = None) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + pyproject)
    if liveforge_toml is not None:
        (tmp_path / "liveforge.toml").write_text(liveforge_toml)
    return tmp_path


def test_defaults_without_any_configuration(tmp_path: Path) -> None:
    """No file, no env: the default Anthropic model and retry policy."""
    config = load_config(tmp_path, env={})
    assert config.model == "anthropic:claude-sonnet-4-5"
    assert config.retry.max_attempts == 4


def test_pyproject_table_builds_the_failover_chain(tmp_path: Path) -> None:
    """model + fallback_models become routes with the right protocol, URL and keys."""
    root = _project(
        tmp_path,
        '[tool.liveforge]\nmodel = "openai:gpt-4o"\n'
        'fallback_models = ["anthropic:claude-x", "ollama:llama3.1"]\n'
        "[tool.liveforge.retry]\nmax_attempts = 2\n",
    )
    config = load_config(root, env=KEYS)
    routes = config.routes(KEYS)
    assert [(r.name, r.protocol, r.model) for r in routes] == [
        ("openai:gpt-4o", "openai", "gpt-4o"),
        ("anthropic:claude-x", "anthropic", "claude-x"),
        ("ollama:llama3.1", "openai", "llama3.1"),
    ]
    assert routes[0].base_url == "https://api.openai.com/v1"
    assert routes[2].base_url == "http://localhost:11434/v1" and routes[2].credentials == []
    assert routes[1].credentials[0].key == SecretStr("sk-ant-secret-aaaa")
    assert config.retry.max_attempts == 2


def test_environment_overrides_files(tmp_path: Path) -> None:
    """LIVEFORGE_MODEL and *_BASE_URL win over the file; extra keys come from *_API_KEYS."""
    root = _project(tmp_path, '[tool.liveforge]\nmodel = "anthropic:a"\n')
    env = {
        **KEYS,
        "LIVEFORGE_MODEL": "openai:gpt-4o-mini",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEYS": "k2, k3",
    }
    routes = load_config(root, env=env).routes(env)
    assert routes[0].name == "openai:gpt-4o-mini"
    assert routes[0].base_url == "http://127.0.0.1:9/v1"
    assert [c.name for c in routes[0].credentials] == [
        "OPENAI_API_KEY",
        "OPENAI_API_KEYS[0]",
        "OPENAI_API_KEYS[1]",
    ]


def test_liveforge_toml_overrides_pyproject_and_defines_providers(tmp_path: Path) -> None:
    """liveforge.toml keys win; a custom provider section defines a new model prefix."""
    root = _project(
        tmp_path,
        '[tool.liveforge]\nmodel = "anthropic:a"\nmax_tokens = 10\n',
        'model = "gpu:qwen"\n[providers.gpu]\nprotocol = "openai"\n'
        'base_url = "http://gpu:8000/v1"\napi_key_env = ["GPU_KEY"]\n',
    )
    env = {"GPU_KEY": "sk-gpu"}
    config = load_config(root, env=env)
    assert config.max_tokens == 10
    route = config.routes(env)[0]
    assert (route.protocol, route.base_url, route.credentials[0].name) == (
        "openai",
        "http://gpu:8000/v1",
        "GPU_KEY",
    )


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ('model = "gpt-4o"', "tool.liveforge.model", "provider:model"),
        ("max_tokens = -5", "tool.liveforge.max_tokens", "greater than 0"),
        ('[retry]\nmax_attempts = "many"', "tool.liveforge.retry.max_attempts", "integer"),
        ("temprature = 0.5", "tool.liveforge.temprature", "unknown key"),
        (
            '[providers.x]\nprotocol = "grpc"\nbase_url = "http://h"',
            "tool.liveforge.providers.x.protocol",
            "'openai' or 'gemini'",
        ),
        (
            '[providers.x]\nprotocol = "openai"\nbase_url = "h:80"',
            "tool.liveforge.providers.x.base_url",
            "http:// or https://",
        ),
        ("[sandbox]\nmemory_mb = -1", "tool.liveforge.sandbox.memory_mb", "greater than 0"),
        ('[sandbox]\nnetwork = "maybe"', "tool.liveforge.sandbox.network", "boolean"),
        ("[sandbox]\nwall = 5", "tool.liveforge.sandbox.wall", "unknown key"),
    ],
)
def test_bad_values_name_the_key_and_the_expected_form(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    """Each invalid value raises ConfigError (a ValueError) naming key and expected form."""
    root = _project(tmp_path, liveforge_toml=text)
    with pytest.raises(ConfigError) as info:
        load_config(root, env={})
    assert info.value.key == key
    assert key in str(info.value) and fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_provider_key_under_any_variable_name_is_kept_from_checks(tmp_path: Path) -> None:
    """A key read from a custom api_key_env variable counts as a secret from then on."""
    from liveforge.kernel.boundary._secrets import Scrubber, without_secrets

    text = '[providers.mine]\nprotocol = "openai"\nbase_url = "http://h/v1"\n'
    root = _project(tmp_path, liveforge_toml=text + 'api_key_env = ["MINE_KEY_VAR"]\n')
    env = {"MINE_KEY_VAR": "mine-secret-value-123", "LIVEFORGE_MODEL": "mine:m"}
    load_config(root, env=env).routes(env)
    assert without_secrets(env) == {"LIVEFORGE_MODEL": "mine:m"}
    assert "mine-secret" not in Scrubber.current().text("key=mine-secret-value-123")


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    """A malformed LIVEFORGE_MODEL is reported under that variable's name."""
    with pytest.raises(ConfigError, match=r"LIVEFORGE_MODEL.*provider:model") as info:
        load_config(tmp_path, env={"LIVEFORGE_MODEL": "gpt-4o"})
    assert info.value.key == "LIVEFORGE_MODEL"


def test_invalid_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    """A TOML syntax error names the file."""
    root = _project(tmp_path, liveforge_toml="model = ")
    with pytest.raises(ConfigError, match=r"liveforge\.toml is not valid TOML"):
        load_config(root, env={})


def test_missing_key_names_the_environment_variable(tmp_path: Path) -> None:
    """A model whose provider needs a key, with none set, says which variable to set."""
    config = load_config(tmp_path, env={})
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY") as info:
        config.routes({})
    assert info.value.key == "providers.anthropic.api_key_env"


def test_unknown_provider_prefix_lists_the_known_ones(tmp_path: Path) -> None:
    """A model prefix that is no provider lists the known providers."""
    config = load_config(tmp_path, env={"LIVEFORGE_MODEL": "acme:m1"})
    with pytest.raises(ConfigError, match=r"unknown provider 'acme'.*ollama"):
        config.routes({})


def test_keys_never_appear_in_reprs_or_errors(tmp_path: Path) -> None:
    """Config, routes and provider reprs and describe() never contain a key value."""
    config = load_config(tmp_path, env=KEYS)
    provider = build_provider(config, env=KEYS)
    shown = " ".join(
        [
            repr(config),
            repr(config.routes(KEYS)),
            repr(provider),
            provider.describe(),
            str(provider.states),
        ]
    )
    assert "secret" not in shown
    assert "ANTHROPIC_API_KEY" in provider.describe()


def test_parse_model_splits_on_the_first_colon() -> None:
    """Model names may contain colons after the provider (e.g. ollama tags)."""
    assert parse_model("ollama:llama3.1:8b") == ("ollama", "llama3.1:8b")
    with pytest.raises(ValueError, match="provider:model"):
        parse_model("llama3.1")


def test_agent_and_context_tables_are_validated(tmp_path: Path) -> None:
    """[tool.liveforge.agent] and [tool.liveforge.context] configure the loop and window."""
    root = _project(
        tmp_path,
        "[tool.liveforge.agent]\nmax_steps = 7\n[tool.liveforge.context]\nwindow = 32000\n",
    )
    config = load_config(root, env={})
    assert config.agent is not None and config.agent.max_steps == 7
    assert config.context is not None and config.context.window == 32000
    (tmp_path / "bad").mkdir()
    bad = _project(tmp_path / "bad", "[tool.liveforge.agent]\nmax_steps = 0\n")
    with pytest.raises(ConfigError, match="max_steps"):
        load_config(bad, env={})


def test_a_bad_value_says_which_file_it_came_from(tmp_path: Path) -> None:
    """A bad value from liveforge.toml is named as written there, not only as tool.liveforge.*."""
    root = _project(tmp_path, "[tool.liveforge]\nmax_tokens = 10\n", 'max_tokens = "lots"\n')
    with pytest.raises(ConfigError) as info:
        load_config(root, env={})
    assert "`max_tokens` in liveforge.toml" in str(info.value)
    assert info.value.key == "tool.liveforge.max_tokens"


def test_a_table_in_both_files_is_merged_key_by_key(tmp_path: Path) -> None:
    """`[permissions]` in liveforge.toml sets the mode and keeps the deny rule pyproject.toml
    gives (a table there does not drop the other file's keys); a bad value in the table is
    named in the file that set that key."""
    root = _project(
        tmp_path,
        '[tool.liveforge.permissions]\ndeny = ["exec"]\n',
        '[permissions]\nmode = "auto-edit"\n',
    )
    permissions = load_config(root, env={}).permissions
    assert (permissions.mode, permissions.deny) == ("auto-edit", ["exec"])
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n[tool.liveforge.permissions]\nmode = 'sometimes'\n"
    )
    (tmp_path / "liveforge.toml").write_text('[permissions]\ndeny = ["exec"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(root, env={})
    assert "tool.liveforge.permissions.mode (in pyproject.toml)" in str(info.value)
