"""Which discovered tools a session's `ToolSettings` let the model see: the profile's set,
plus ``allow``, minus ``deny`` (deny wins). Names are tool names, patterns with ``*``
(``mcp__github__*``) or ``group:<name>``; the built-in groups are in
`liveforge.declarations.tool_settings`, the user's own in ``settings.groups``,
``group:mcp`` is every MCP server's tool and ``group:custom`` every other tool outside the
built-in groups."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from liveforge.declarations.tool_settings import (
    BUILTIN_GROUPS,
    CUSTOM_GROUP,
    MCP_GROUP,
    MCP_PREFIX,
    PROFILES,
    ToolSettings,
)
from liveforge.kernel.errors import ConfigError

__all__ = ["expand", "visible_names"]


def expand(names: Iterable[str], settings: ToolSettings, every: Iterable[str]) -> set[str]:
    """Tool names for a list of tool and group names; unknown groups are a `ConfigError`."""
    every = list(every)
    builtin = {name for members in BUILTIN_GROUPS.values() for name in members}
    groups: dict[str, Iterable[str]] = {**BUILTIN_GROUPS, **settings.groups}
    mcp = [name for name in every if name.startswith(MCP_PREFIX)]
    groups[MCP_GROUP] = mcp
    groups[CUSTOM_GROUP] = [name for name in every if name not in builtin and name not in mcp]
    found: set[str] = set()
    for name in names:
        if "*" in name and not name.startswith("group:"):
            found.update(fnmatch.filter(every, name))
            continue
        if not name.startswith("group:"):
            found.add(name)
            continue
        members = groups.get(name.removeprefix("group:"))
        if members is None:
            known = ", ".join(f"group:{g}" for g in sorted(groups))
            raise ConfigError(
                f"unknown tool group {name!r} in [tool.liveforge.tools]; known: {known}.",
                key="tools",
            )
        found.update(members)
    return found


def visible_names(settings: ToolSettings, every: Iterable[str]) -> set[str]:
    """The names among `every` (the tools discovered) that the settings let through."""
    every = list(every)
    base = PROFILES[settings.profile]
    chosen = set(every) if base is None else expand(base, settings, every)
    chosen |= expand(settings.allow, settings, every)
    chosen -= expand(settings.deny, settings, every)
    return {name for name in every if name in chosen}
