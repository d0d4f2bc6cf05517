"""Where the configuration comes from: the project's files and the environment, merged.

Sources, later ones winning: `[tool.liveforge]` in the project's pyproject.toml, the
project's `liveforge.toml` (same keys, at top level), environment variables. Nothing here is
validated (`liveforge.config` does that, `liveforge.check_config` for checks alone), and only
the standard library is used: a command reads its configuration before it imports anything
heavy, and a one-shot check decides from it whether its sandbox may start at once.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from liveforge.kernel.errors import ConfigError

__all__ = ["CHECK_KEYS", "ENV_KEYS", "ConfigTables", "only_check_keys", "read_tables"]

ConfigTables = tuple[dict[str, Any], dict[str, str], set[str]]
"""What the configuration sources say: the merged table, the file that set each key (by its
dotted path: `permissions.deny`), and the keys set by environment variables."""

ENV_KEYS = {"model": "LIVEFORGE_MODEL", "fallback_models": "LIVEFORGE_FALLBACK_MODELS"}
"""Top-level keys an environment variable sets, and that variable."""

CHECK_KEYS = frozenset({"sandbox", "allow_paths", "outside_project"})
"""The top-level keys checks read (`liveforge.check_config.CheckConfig`)."""


def read_tables(root: Path, env: Mapping[str, str]) -> ConfigTables:
    """`[tool.liveforge]` of pyproject.toml, then liveforge.toml, then the environment's
    overrides, merged (later ones win, key by key: a table in both files keeps the keys
    only pyproject.toml sets), unvalidated."""
    data: dict[str, Any] = {}
    files: dict[str, str] = {}
    if (root / "pyproject.toml").is_file():
        table = _read_toml(root / "pyproject.toml").get("tool", {}).get("liveforge", {})
        _merge(data, table, "pyproject.toml", files, "")
    if (root / "liveforge.toml").is_file():
        _merge(data, _read_toml(root / "liveforge.toml"), "liveforge.toml", files, "")
    overrides = _env_overrides(env)
    data.update(overrides)
    return data, files, set(overrides)


def _merge(
    into: dict[str, Any], table: Mapping[str, Any], file: str, files: dict[str, str], at: str
) -> None:
    """Merge `table` into `into`, tables key by key, noting in `files` where each key came
    from."""
    for key, value in table.items():
        path = f"{at}{key}"
        files[path] = file
        if isinstance(value, dict):
            if not isinstance(into.get(key), dict):
                into[key] = {}
            _merge(into[key], value, file, files, f"{path}.")
        else:
            into[key] = value


def only_check_keys(data: Mapping[str, Any]) -> bool:
    """Whether a merged configuration sets nothing but the keys checks read: then no
    provider, and no key of one, is configured."""
    return data.keys() <= CHECK_KEYS


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}. Fix the file and retry.", key=str(path)
        ) from None


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if env.get("LIVEFORGE_MODEL"):
        out["model"] = env["LIVEFORGE_MODEL"].strip()
    if env.get("LIVEFORGE_FALLBACK_MODELS") is not None:
        out["fallback_models"] = [
            m.strip() for m in env["LIVEFORGE_FALLBACK_MODELS"].split(",") if m.strip()
        ]
    return out
