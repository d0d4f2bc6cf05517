"""The configuration a check needs, read without the agent's declarations.

A one-shot command (`liveforge verify`, `test`, `apply`, `find`, `view`) reads three keys
of `[tool.liveforge]`: `sandbox`, `allow_paths` and `outside_project` (`CheckConfig`). Validating
the whole table (`liveforge.config.LiveforgeConfig`) imports every declaration it refers to
(models, providers, the gateway), which costs more than the check itself. So
`validated_alone` validates only these keys when they are all the configuration holds;
when it holds any other key (or an environment override such as LIVEFORGE_MODEL), or a value
is wrong, it says None, and the caller validates the whole configuration with `load_config`:
a bad key anywhere is reported by every command, in the same words.

    data, _, _ = read_tables(project_root, os.environ)     # liveforge.config_files
    config = validated_alone(data) or load_config(project_root)
    config.sandbox.settings(project_root)                  # the kernel's CheckSettings
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from liveforge.config_files import only_check_keys
from liveforge.kernel.boundary._policy import CheckSettings
from liveforge.kernel.defaults import CHECK_PROCESSES

__all__ = ["CheckConfig", "SandboxConfig", "validated_alone"]


class SandboxConfig(BaseModel):
    """The check boundary of `verify` and `run_tests` (`[tool.liveforge.sandbox]`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    network: bool = False
    """Let checks open TCP connections (test suites that need loopback servers)."""
    memory_mb: int | None = Field(default=2048, gt=0)
    """Address space a check may add to the sandbox template's, MiB; null: no limit."""
    cpu_seconds: float | None = Field(default=None, gt=0)
    """CPU time of a check's process; null: only the wall-clock timeout."""
    processes: int | None = Field(default=CHECK_PROCESSES, gt=0)
    """Processes a check may have at once, threads included (in its own user namespace,
    root's checks too; where there is none, more processes its user may have, which does
    not bind root). Default 512."""
    output_bytes: int = Field(default=1 << 20, ge=1024)
    """Bytes kept of each output stream (the middle of longer output is dropped)."""
    readable: list[str] = Field(default_factory=list)
    """Extra paths checks may read (besides the interpreter, libraries and project)."""
    writable: list[str] = Field(default_factory=list)
    """Extra paths checks may write (besides their scratch folder)."""
    isolation: bool = True
    """False turns the boundary off; every result then says `isolation: none`."""

    def settings(self, project_root: Path) -> CheckSettings:
        """The kernel's settings, relative paths taken from the project root."""
        fields = self.model_dump()
        for key in ("readable", "writable"):
            fields[key] = tuple(str((project_root / p).resolve()) for p in fields[key])
        return CheckSettings(**fields)


class CheckConfig(BaseModel):
    """The keys of `[tool.liveforge]` that checks and file writes read, named by
    `liveforge.config_files.CHECK_KEYS` (the whole table is
    `liveforge.config.LiveforgeConfig`, which has these too)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """The check boundary: network, limits, extra paths (`[tool.liveforge.sandbox]`)."""
    allow_paths: list[str] = Field(default_factory=list)
    """Folders liveforge may write (persist, file writes, undo) although they are not the
    project's own code: an environment or installed package in the project (e.g.
    ``.venv/lib/python3.12/site-packages/pkg``), build output, a folder outside the project.
    Relative to the project root."""
    outside_project: bool = False
    """Patch modules that are not the project's own code (standard library, site-packages,
    an environment in the project) without asking per patch (`--outside-project`, the
    patch tool's `outside_project`)."""


def validated_alone(data: Mapping[str, Any]) -> CheckConfig | None:
    """The merged configuration `data` (`read_tables`) as a `CheckConfig` when it holds
    only the checks' keys with right values; None otherwise: then the whole configuration
    is validated (`liveforge.config.load_config`), which reports a wrong key or value in
    its own words."""
    if not only_check_keys(data):
        return None
    try:
        return CheckConfig.model_validate(data)
    except ValidationError:
        return None
