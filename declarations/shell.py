# mypy: disable-error-code="empty-body"
"""The agent's shell: run a command to its end, or in the background, under limits.

Commands run with ``bash -c`` in a folder of the project, by default *inside the check
boundary* (`liveforge.kernel.boundary._confine`): Landlock lets them read the system and the project
and write only the project and a private ``$TMPDIR``, no TCP unless ``network`` (or the
configuration) allows it, no signals to processes outside their own tree; no secret
variables; data and file-size limits; and nothing they start outlives them (a ``setsid``
escapee included). They run on a copy-on-write view of the project, and what they wrote is
applied afterwards as one undoable step of the runtime's history (`Runtime.apply_files`;
``result.changes`` says what became of the files). ``boundary=False`` runs a command as a
terminal would (full environment, no limits but the timeout, changes not undoable); the
permission policy asks before any command (effect ``shell``), so that is a person's
decision. The configured allow/deny lists of command names are checked first, in every part
of a pipeline or command list.

    shell = Shell(runtime=rt, settings=ShellSettings())
    result = shell.run("pytest -q", cwd=".", timeout=60)
    result.exit_code, result.output, result.timed_out, result.changes
    info = shell.start("python -m http.server 8000", network=True)
    shell.poll(info.id); shell.read(info.id); shell.kill(info.id)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import forwardpy
from pydantic import BaseModel

from liveforge.declarations.tool_settings import ShellSettings
from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__ = ["CommandRefused", "ProcessInfo", "Shell", "ShellResult"]


class CommandRefused(LiveforgeError, PermissionError):
    """A command the allow/deny lists (or a bad folder) refuse; it did not run."""

    def __init__(self, message: str, *, command: str = "") -> None:
        super().__init__(message)
        self.command = command


class ShellResult(BaseModel):
    """How a command ended: exit code (negative: killed by that signal), output, timing."""

    command: str
    cwd: str
    exit_code: int | None
    output: str
    timed_out: bool = False
    seconds: float = 0.0
    boundary: bool = True
    network: bool = True
    isolation: str = ""
    """What held the command in, in one line."""
    changes: str = ""
    """What became of the files the command changed in the project, in one line."""


class ProcessInfo(BaseModel):
    """A background process: its id, command, whether it runs, and its exit code."""

    id: str
    command: str
    pid: int
    running: bool
    exit_code: int | None = None
    seconds: float = 0.0
    output_bytes: int = 0
    boundary: bool = True
    network: bool = True
    isolation: str = ""
    changes: str = ""
    """What became of the files it changed in the project since the last look, one line."""


class Shell(forwardpy.Object):
    """Running shell commands for the agent, to the end or in the background."""

    runtime: Runtime
    settings: ShellSettings

    def check(self, command: str) -> None:
        """Raise `CommandRefused` if the allow/deny lists refuse any command in ``command``."""
        ...

    def run(
        self,
        command: str,
        cwd: str = ".",
        timeout: float | None = None,
        boundary: bool = True,
        network: bool | None = None,
    ) -> ShellResult:
        """Run ``command`` to its end (killed at ``timeout`` seconds) and return the result;
        ``network`` None takes the configured default."""
        ...

    def start(
        self, command: str, cwd: str = ".", boundary: bool = True, network: bool | None = None
    ) -> ProcessInfo:
        """Start ``command`` in the background; its output is kept for `read`."""
        ...

    def poll(self, process_id: str) -> ProcessInfo:
        """Whether the background process still runs, and its exit code when it ended."""
        ...

    def read(self, process_id: str) -> str:
        """The output the background process wrote since the last read."""
        ...

    def kill(self, process_id: str) -> ProcessInfo:
        """Stop the background process and its children (SIGTERM, then SIGKILL)."""
        ...

    def processes(self) -> list[ProcessInfo]:
        """The background processes of this runtime, running or ended."""
        ...
