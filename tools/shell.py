"""Shell commands: run one to its end (``exec``), or manage a background one (``process``).

Commands run with bash in a folder of the project, inside the check boundary by default:
they read the system and the project, write only the project and their own ``$TMPDIR``,
have no network unless asked, cannot signal other processes, get no secret variables, have
memory and file-size limits, and nothing they start outlives them. The user is asked before
each command unless the permission mode allows shell commands; a command outside the
boundary (``boundary=False``, effect ``unbounded``) is asked about in every mode unless the
configuration allows it by name. Reading a background process's state and output asks
nothing.
"""

from __future__ import annotations

from typing import Literal

from liveforge.declarations.permissions import CallEffects, effect
from liveforge.declarations.shell import ProcessInfo, Shell, ShellResult
from liveforge.tools._context import runtime, settings

__all__ = ["exec", "process"]


def _shell() -> Shell:
    return Shell(runtime=runtime(), settings=settings().shell)


_OUTSIDE: CallEffects = {"boundary": {False: "unbounded"}}


@effect("shell", stricter=_OUTSIDE)
def exec(
    command: str,
    cwd: str = ".",
    timeout: float | None = None,
    boundary: bool = True,
    network: bool | None = None,
) -> str:
    """Run a shell command to its end: exit code, then output (stdout and stderr).

    Args:
        command: the bash command line, e.g. "pytest -q tests/test_x.py"
        cwd: folder to run in, relative to the project root
        timeout: seconds before the command is killed; omit for the configured default
        boundary: run inside the check boundary (writes only in the project, no secrets,
            limits); false runs it as a terminal would, which the user must approve
            in every mode
        network: let the command open network connections (inside the boundary); omit for
            the configured default (off unless configured)
    """
    return _report(_shell().run(command, cwd, timeout, boundary, network))


@effect(
    "shell",
    lighter={"action": {"poll": "read", "read": "read", "list": "read"}},
    stricter=_OUTSIDE,
)
def process(
    action: Literal["start", "poll", "read", "kill", "list"],
    command: str = "",
    process_id: str = "",
    cwd: str = ".",
    boundary: bool = True,
    network: bool | None = None,
) -> str:
    """Background commands (servers, watchers, long builds): start, poll, read output, kill.

    Args:
        action: start a command, poll or read or kill process_id, or list them all
        command: the command to start (action start)
        process_id: the id start returned, e.g. p1 (actions poll, read, kill)
        cwd: folder to start in, relative to the project root (action start)
        boundary: start inside the check boundary (action start); false starts it as a
            terminal would, which the user must approve in every mode
        network: let it open network connections, e.g. a server tests talk to (action start)
    """
    shell = _shell()
    if action == "start":
        info = shell.start(command, cwd, boundary, network)
        how = f"read its output with process(action='read', process_id='{info.id}')"
        return f"{_line(info)}\n[{info.isolation}]\n{how}"
    if action == "list":
        return "\n".join(_line(info) for info in shell.processes()) or "no background processes"
    if not process_id:
        return f"give the process_id for action {action!r} (process(action='list') shows them)"
    if action == "poll":
        return _line(shell.poll(process_id))
    if action == "kill":
        return _line(shell.kill(process_id))
    output = shell.read(process_id)
    return f"{_line(shell.poll(process_id))}\n{output or '(no new output)'}"


def _line(info: ProcessInfo) -> str:
    state = "running" if info.running else f"exited {info.exit_code}"
    files = f"\n  files: {info.changes}" if info.changes else ""
    return (
        f"{info.id} pid {info.pid} {state} after {info.seconds:.1f}s, "
        f"{info.output_bytes} bytes of output: {info.command}{files}"
    )


def _report(result: ShellResult) -> str:
    if result.timed_out:
        head = f"timed out after {result.seconds:.1f}s: killed (exit {result.exit_code})"
    else:
        head = f"exit {result.exit_code} in {result.seconds:.1f}s"
    body = result.output if result.output.strip() else "(no output)"
    files = f"\nfiles: {result.changes}" if result.changes else ""
    return f"$ {result.command}\n{head} [{result.isolation}]{files}\n{body}"
