"""What the tools may do in one session: the tool profile, allow/deny lists, and the settings
of the file, shell and memory tools (`[tool.liveforge.tools]` in the project's config).

A *profile* is the base set of tools the model sees; ``allow`` adds tools or groups to it,
``deny`` removes them (deny wins). A denied tool is absent from the model's tool list and
refused if called anyway. Names in the lists are tool names or ``group:<name>``:

    profile   tools
    minimal   read_file group:code
    coding    group:code group:files group:shell group:memory verify run_tests diff history rollback
              group:mcp
    live      group:code group:live group:custom group:mcp    (liveforge's original set)
    full      every tool

    group:code     inspect_module view_source find references complete
    group:files    read_file write_file edit_file apply_patch
    group:shell    exec process
    group:memory   memory_write memory_search memory_forget
    group:live     patch reload rollback history diff persist execute verify run_tests
    group:mcp      every tool of the configured MCP servers (``mcp__SERVER__TOOL``)
    group:custom   every other tool outside the groups above (project tools, tools the agent
                   made)

A name with ``*`` is a pattern: ``deny = ["mcp__github__*"]`` hides one MCP server's tools.

Example::

    [tool.liveforge.tools]
    profile = "coding"
    deny = ["group:shell"]
    groups = { review = ["read_file", "diff", "history"] }
    shell = { allow = ["pytest", "git", "ls"], timeout = 60 }
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "BUILTIN_GROUPS",
    "MCP_GROUP",
    "MCP_PREFIX",
    "PROFILES",
    "EmbeddingSettings",
    "FileSettings",
    "MemorySettings",
    "ProfileName",
    "ShellSettings",
    "ToolSettings",
]

ProfileName = Literal["minimal", "coding", "live", "full"]

BUILTIN_GROUPS: dict[str, tuple[str, ...]] = {
    "code": ("inspect_module", "view_source", "find", "references", "complete"),
    "files": ("read_file", "write_file", "edit_file", "apply_patch"),
    "shell": ("exec", "process"),
    "memory": ("memory_write", "memory_search", "memory_forget"),
    "skills": ("load_skill",),
    "agents": ("spawn_agent", "agents_list", "agent_send", "agent_result", "agent_accept"),
    "live": (
        "patch",
        "reload",
        "rollback",
        "history",
        "diff",
        "persist",
        "execute",
        "verify",
        "run_tests",
    ),
}
CUSTOM_GROUP = "custom"
"""Tools outside every built-in group: the project's own tools and tools the agent made."""
MCP_GROUP = "mcp"
"""The tools of MCP servers, named ``mcp__SERVER__TOOL``."""
MCP_PREFIX = "mcp__"

PROFILES: dict[str, tuple[str, ...] | None] = {
    "minimal": ("read_file", "group:code"),
    "coding": (
        "group:code",
        "group:files",
        "group:shell",
        "group:memory",
        "group:skills",
        "verify",
        "run_tests",
        "diff",
        "history",
        "rollback",
        "group:mcp",
    ),
    "live": ("group:code", "group:live", "group:skills", "group:custom", "group:mcp"),
    "full": None,
}
"""Each profile's tools and groups; ``None`` is every tool."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileSettings(_Section):
    """The file tools (read_file, write_file, edit_file, apply_patch)."""

    allow_paths: list[str] = Field(default_factory=list)
    """Folders outside the project the file tools may read and write too."""
    max_read_bytes: int = Field(default=2_000_000, gt=0)
    """Larger files are refused by read_file (read them with exec, head/sed)."""


class ShellSettings(_Section):
    """The shell tools (exec, process)."""

    allow: list[str] = Field(default_factory=list)
    """Command names that may run; empty: every command not denied."""
    deny: list[str] = Field(default_factory=list)
    """Command names that never run (checked in every part of a pipeline or list)."""
    timeout: float = Field(default=120.0, gt=0)
    """Default seconds before exec kills a command."""
    max_timeout: float = Field(default=1800.0, gt=0)
    """The longest timeout a call may ask for."""
    output_limit: int = Field(default=20_000, gt=0)
    """Characters of a command's output the model receives (head and tail kept)."""
    memory_mb: int | None = Field(default=2048, gt=0)
    """Data (heap) limit of a command inside the check boundary (None: no limit)."""
    network: bool = False
    """Let commands inside the check boundary open TCP connections (a call's ``network``
    argument decides for that call)."""
    readable: list[str] = Field(default_factory=list)
    """Paths (relative to the project root, or absolute) commands inside the boundary may
    read besides the system, the interpreter with its libraries, and the project."""
    writable: list[str] = Field(default_factory=list)
    """Paths commands inside the boundary may write besides the project and a private
    temporary folder (``$TMPDIR``)."""


class EmbeddingSettings(_Section):
    """An embedding provider for vector search over memories (optional)."""

    protocol: Literal["openai", "ollama"] = "openai"
    """``openai``: an OpenAI-compatible /embeddings endpoint; ``ollama``: Ollama's /api/embed."""
    base_url: str = "https://api.openai.com/v1"
    model: str = "text-embedding-3-small"
    api_key_env: str = "OPENAI_API_KEY"
    """The environment variable holding the key (ignored by Ollama)."""


class MemorySettings(_Section):
    """The memory tools (memory_write, memory_search, memory_forget)."""

    path: str = ".liveforge/memory.sqlite"
    """The memory database, relative to the project root."""
    prompt_budget: int = Field(default=600, ge=0)
    """Tokens of relevant memories offered in the system prompt (0: none)."""
    embeddings: EmbeddingSettings | None = None
    """Vector search (hybrid with full-text ranking) when set."""


class ToolSettings(_Section):
    """The tool profile, allow/deny lists and groups, and the tools' own settings."""

    profile: ProfileName = "full"
    allow: list[str] = Field(default_factory=list)
    """Tools, ``group:<name>`` or patterns (``mcp__github__*``) added to the profile."""
    deny: list[str] = Field(default_factory=list)
    """Tools, ``group:<name>`` or patterns removed (always wins)."""
    groups: dict[str, list[str]] = Field(default_factory=dict)
    """Groups of your own, usable as ``group:<name>`` in allow and deny."""
    files: FileSettings = Field(default_factory=FileSettings)
    shell: ShellSettings = Field(default_factory=ShellSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)

    @model_validator(mode="after")
    def _known_groups(self) -> ToolSettings:
        known = {*BUILTIN_GROUPS, CUSTOM_GROUP, MCP_GROUP, *self.groups}
        for name in [*self.allow, *self.deny]:
            group = name.removeprefix("group:")
            if name.startswith("group:") and group not in known:
                listed = ", ".join(f"group:{g}" for g in sorted(known))
                raise ValueError(f"unknown tool group {name!r}; known groups: {listed}")
        return self
