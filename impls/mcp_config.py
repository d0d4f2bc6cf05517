"""Which MCP servers the agent may use: `.mcp.json` at the project root, in Claude Code's format.

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                   "env": {"DEBUG": "1"}},
        "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
                   "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}
    }}

A server without ``type`` (or with ``"type": "stdio"``) is a command started as a child
process; ``"type": "http"`` is a streamable-HTTP endpoint. ``${VAR}`` and ``${VAR:-default}``
in ``command``, ``args``, ``env``, ``url`` and ``headers`` are filled in from liveforge's
environment; a stdio server gets no other variable of liveforge's environment than the
harmless ones the MCP SDK passes (HOME, PATH, USER, ...), so no provider key reaches it
unless its entry names it. An optional ``timeout`` (seconds per call) may be given.

The same file in the user's settings (``$LIVEFORGE_CONFIG_HOME/mcp.json``, else
``$XDG_CONFIG_HOME/liveforge/mcp.json``, else
``~/.config/liveforge/mcp.json``) lists servers for every project; a project's entry of the
same name wins. A malformed file or entry is a problem line naming the file and the server,
and the other servers are still used.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "PROJECT_FILE",
    "HttpServer",
    "McpConfig",
    "ServerEntry",
    "StdioServer",
    "load_mcp_config",
    "parse_servers",
    "user_file",
]

PROJECT_FILE = ".mcp.json"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    timeout: float | None = Field(default=None, gt=0)
    """Seconds one tool call may take (default: liveforge's)."""


class StdioServer(_Entry):
    """A server liveforge starts as a child process and speaks to over its stdin/stdout."""

    type: Literal["stdio"] = "stdio"
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    """Where the command runs (relative to the project; default: the project root)."""

    def describe(self) -> str:
        """The command line, for listings."""
        return " ".join([self.command, *self.args])


class HttpServer(_Entry):
    """A server reached over streamable HTTP."""

    type: Literal["http"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    def describe(self) -> str:
        """The URL, for listings (headers may hold keys: never shown)."""
        return self.url


ServerEntry = StdioServer | HttpServer


@dataclass
class McpConfig:
    """The servers by name, where each was configured, and the entries that were refused."""

    servers: dict[str, ServerEntry] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def user_file(env: Mapping[str, str] | None = None) -> Path:
    """The user's MCP settings: ``$LIVEFORGE_CONFIG_HOME/mcp.json``, else
    ``$XDG_CONFIG_HOME/liveforge/mcp.json`` (the folders of the user's skills too)."""
    env = os.environ if env is None else env
    if env.get("LIVEFORGE_CONFIG_HOME"):
        return Path(env["LIVEFORGE_CONFIG_HOME"]).expanduser() / "mcp.json"
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser()
    return base / "liveforge" / "mcp.json"


def load_mcp_config(project_root: str | Path, env: Mapping[str, str] | None = None) -> McpConfig:
    """The MCP servers of the user's settings and the project's `.mcp.json` (which wins)."""
    env = os.environ if env is None else env
    config = McpConfig()
    for path in (user_file(env), Path(project_root) / PROJECT_FILE):
        if path.is_file():
            _read_file(path, env, config)
    return config


def _read_file(path: Path, env: Mapping[str, str], config: McpConfig) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        config.problems.append(f"{path}: not read, its MCP servers are left out: {exc}")
        return
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        config.problems.append(f'{path}: no "mcpServers" object; no MCP server read from it')
        return
    parse_servers(servers, env, config, origin=str(path))


def parse_servers(
    servers: Mapping[str, Any], env: Mapping[str, str] | None, config: McpConfig, *, origin: str
) -> None:
    """Add the entries of one ``mcpServers`` object to `config`; refused ones as problems.
    With `env` None the values are taken literally (no ``${VAR}`` is filled in)."""
    for name, raw in servers.items():
        try:
            config.servers[name] = _entry(name, raw, env)
            config.origins[name] = origin
        except ValueError as exc:
            config.servers.pop(name, None)
            config.problems.append(f"MCP server {name!r} ({origin}): left out: {exc}")


def _entry(name: str, raw: Any, env: Mapping[str, str] | None) -> ServerEntry:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ValueError("a server name may hold only letters, digits, '_' and '-'")
    if not isinstance(raw, dict):
        raise ValueError("the entry must be a JSON object")
    kind = raw.get("type", "stdio")
    model: type[_Entry]
    if kind == "stdio":
        model = StdioServer
    elif kind == "http":
        model = HttpServer
    else:
        raise ValueError(
            f'type {kind!r} is not supported; use "stdio" (a command) or "http" '
            "(streamable HTTP; servers that speak only the older SSE transport need a proxy)"
        )
    try:
        entry = model.model_validate(raw if env is None else _expand(raw, env))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        raise ValueError(f"{where}: {first['msg']}") from None
    assert isinstance(entry, StdioServer | HttpServer)
    return entry


def _expand(value: Any, env: Mapping[str, str]) -> Any:
    """``${VAR}`` and ``${VAR:-default}`` filled in, in every string of `value`."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda m: _variable(m, env), value)
    if isinstance(value, list):
        return [_expand(item, env) for item in value]
    if isinstance(value, dict):
        return {key: _expand(item, env) for key, item in value.items()}
    return value


def _variable(match: re.Match[str], env: Mapping[str, str]) -> str:
    name, default = match.group(1), match.group(2)
    if name in env:
        return env[name]
    if default is not None:
        return default
    raise ValueError(f"${{{name}}} is not set in the environment (or give ${{{name}:-default}})")
