"""Default behaviour of `Shell`: command lists checked, ``bash -c`` in its own process group
inside the check boundary (`liveforge.impls.shell_boundary`) unless asked otherwise, output
into files that are read back bounded, background processes kept per runtime. A command
that is stopped in any way — its timeout, or an exception raised in the waiting thread (a
sub-agent's limit) — has its whole process group killed before the call returns.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import forwardpy

from liveforge.declarations.shell import CommandRefused, ProcessInfo, Shell, ShellResult
from liveforge.declarations.tool_settings import ShellSettings
from liveforge.impls.live_program import released
from liveforge.impls.shell_boundary import describe, launch
from liveforge.impls.shell_changes import Seen, remove_scratch, what_changed
from liveforge.kernel.errors import UnsafePath
from liveforge.kernel.runtime._filewrites import confined
from liveforge.tools._output import clip_middle, plain

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__: list[str] = []

MAX_BACKGROUND = 8
"""Background processes one runtime may have running at once."""
_KILL_GRACE = 2.0
_OPERATORS = {"|", "||", "&", "&&", ";", ";;", "\n", "(", ")", "|&"}
_UNCHECKABLE = re.compile(r"\$\(|`|<\(|>\(")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class _Background:
    info: ProcessInfo
    popen: subprocess.Popen[bytes]
    folder: Path
    started: float
    report: dict[str, Any] | None
    offset: int = 0
    seen: Seen = field(default_factory=dict)

    @property
    def output(self) -> Path:
        return self.folder / "output.txt"


@dataclass
class _Processes:
    items: dict[str, _Background] = field(default_factory=dict)
    counter: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


_registry: weakref.WeakKeyDictionary[Runtime, _Processes] = weakref.WeakKeyDictionary()


def command_names(command: str) -> list[str]:
    """The command name of every simple command in ``command`` (pipelines, lists, subshells),
    without leading ``VAR=value`` assignments; `ValueError` when it cannot be split."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()\n")
    lexer.whitespace = " \t\r"
    lexer.commenters = ""
    names, expecting = [], True
    for token in lexer:
        if token in _OPERATORS or set(token) <= set(";&|()\n"):
            expecting = True
        elif expecting and not _ASSIGNMENT.match(token):
            names.append(os.path.basename(token))
            expecting = False
    return names


@forwardpy.impl(Shell.check)
def check(self: Shell, command: str) -> None:
    if not command.strip():
        raise CommandRefused("the command is empty; give a shell command to run.")
    if "\0" in command:
        raise CommandRefused("the command contains a NUL byte, which no shell can run.")
    try:
        names = command_names(command)
    except ValueError as exc:
        raise CommandRefused(f"the command cannot be parsed ({exc}); check its quoting.") from None
    denied = [n for n in names if n in self.settings.deny]
    if denied:
        raise CommandRefused(
            f"{', '.join(sorted(set(denied)))} is denied by [tool.liveforge.tools.shell] deny; "
            "the command did not run. Do it another way, or ask the user.",
            command=command,
        )
    if not self.settings.allow:
        return
    if _UNCHECKABLE.search(command):
        raise CommandRefused(
            "with a shell allow list, commands with $(...), `...` or <(...) cannot be checked "
            "and do not run; write the steps as separate commands.",
            command=command,
        )
    outside = [n for n in names if n not in self.settings.allow]
    if outside:
        raise CommandRefused(
            f"{', '.join(sorted(set(outside)))} is not in the shell allow list "
            f"({', '.join(self.settings.allow)}); the command did not run.",
            command=command,
        )


def _folder(shell: Shell, cwd: str) -> Path:
    try:
        path = confined(shell.runtime.project_root, cwd or ".")
    except UnsafePath as exc:
        raise CommandRefused(f"cwd refused: {exc}") from None
    if not path.is_dir():
        raise CommandRefused(f"cwd {cwd!r} is not a folder of the project.")
    return path


def _stop(popen: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, SIGKILL after a grace period."""
    for sig, wait in ((signal.SIGTERM, _KILL_GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            popen.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail_text(path: Path, limit: int) -> str:
    """The file's text, head and tail kept within ``limit`` characters."""
    with open(path, "rb") as file:
        size = file.seek(0, os.SEEK_END)
        if size <= 4 * limit:
            file.seek(0)
            return clip_middle(plain(file.read().decode("utf-8", "replace")), limit)
        half = limit // 2
        file.seek(0)
        head = file.read(half).rpartition(b"\n")[0]
        file.seek(size - half)
        tail = file.read().partition(b"\n")[2]
    omitted = size - len(head) - len(tail)
    text = b"%s\n[... %d bytes omitted ...]\n%s" % (head, omitted, tail)
    return plain(text.decode("utf-8", "replace"))


@forwardpy.impl(Shell.run)
def run(
    self: Shell,
    command: str,
    cwd: str = ".",
    timeout: float | None = None,
    boundary: bool = True,
    network: bool | None = None,
) -> ShellResult:
    self.check(command)
    folder = _folder(self, cwd)
    if timeout is not None and timeout <= 0:
        raise CommandRefused(f"timeout must be a positive number of seconds, not {timeout}.")
    seconds = min(timeout or self.settings.timeout, self.settings.max_timeout)
    network = self.settings.network if network is None else network
    scratch = Path(tempfile.mkdtemp(prefix="liveforge-exec-"))
    try:
        started = time.monotonic()
        popen, report = launch(self, command, folder, scratch, boundary=boundary, network=network)
        timed_out = False
        # while the command runs, other agents' calls go on (a sub-agent's long command
        # must not hold up its parent); what it changed is taken in with the lock again
        with released():
            try:
                popen.wait(seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _stop(popen)  # also reaps what the command left running in its group;
                # an interrupted call (a sub-agent's timeout) kills the command here too
        return ShellResult(
            command=command,
            cwd=cwd or ".",
            exit_code=popen.returncode,
            output=_tail_text(scratch / "output.txt", self.settings.output_limit),
            timed_out=timed_out,
            seconds=time.monotonic() - started,
            boundary=boundary,
            network=not boundary or bool(report and report["network"]),
            isolation=describe(boundary, report),
            changes=what_changed(self.runtime, scratch, report, f"$ {command}", boundary=boundary),
        )
    finally:
        remove_scratch(scratch)


def _processes(shell: Shell) -> _Processes:
    found = _registry.get(shell.runtime)
    if found is None:
        found = _registry[shell.runtime] = _Processes()
    return found


def _get(shell: Shell, process_id: str) -> _Background:
    items = _processes(shell).items
    if process_id not in items:
        known = ", ".join(items) or "none"
        raise CommandRefused(f"no background process {process_id!r}; known: {known}.")
    return items[process_id]


def _refresh(shell: Shell, item: _Background, *, apply: bool = True) -> ProcessInfo:
    """The process's state now, its file changes since the last look applied."""
    code = item.popen.poll()
    info = item.info
    info.running, info.exit_code = code is None, code
    if info.running:
        info.seconds = time.monotonic() - item.started
    info.output_bytes = item.output.stat().st_size if item.output.exists() else 0
    if apply:
        label = f"$ {info.command} (background {info.id})"
        info.changes = what_changed(
            shell.runtime, item.folder, item.report, label, boundary=info.boundary, seen=item.seen
        )
    return info.model_copy()


@forwardpy.impl(Shell.start)
def start(
    self: Shell, command: str, cwd: str = ".", boundary: bool = True, network: bool | None = None
) -> ProcessInfo:
    self.check(command)
    folder = _folder(self, cwd)
    network = self.settings.network if network is None else network
    table = _processes(self)
    with table.lock:
        running = [i for i in table.items.values() if i.popen.poll() is None]
        if len(running) >= MAX_BACKGROUND:
            raise CommandRefused(
                f"{len(running)} background processes are running (the limit); kill one first."
            )
        table.counter += 1
        process_id = f"p{table.counter}"
        scratch = Path(tempfile.mkdtemp(prefix=f"liveforge-{process_id}-"))
        popen, report = launch(self, command, folder, scratch, boundary=boundary, network=network)
        info = ProcessInfo(
            id=process_id,
            command=command,
            pid=popen.pid,
            running=True,
            boundary=boundary,
            network=not boundary or bool(report and report["network"]),
            isolation=describe(boundary, report),
        )
        table.items[process_id] = _Background(info, popen, scratch, time.monotonic(), report)
    return _refresh(self, table.items[process_id], apply=False)


@forwardpy.impl(Shell.poll)
def poll(self: Shell, process_id: str) -> ProcessInfo:
    return _refresh(self, _get(self, process_id))


@forwardpy.impl(Shell.read)
def read(self: Shell, process_id: str) -> str:
    item = _get(self, process_id)
    with open(item.output, "rb") as file:
        file.seek(item.offset)
        data = file.read(4 * self.settings.output_limit)
    item.offset += len(data)
    return clip_middle(plain(data.decode("utf-8", "replace")), self.settings.output_limit)


@forwardpy.impl(Shell.kill)
def kill(self: Shell, process_id: str) -> ProcessInfo:
    item = _get(self, process_id)
    _stop(item.popen)
    return _refresh(self, item)


@forwardpy.impl(Shell.processes)
def processes(self: Shell) -> list[ProcessInfo]:
    return [_refresh(self, item) for item in _processes(self).items.values()]


_OWNER = os.getpid()


@atexit.register
def _stop_all() -> None:
    """Background processes do not outlive the program that started them (and a forked
    child, a live check say, leaves its parent's processes alone); what they wrote since
    the last look still reaches the project."""
    if os.getpid() != _OWNER:
        return
    for runtime, table in list(_registry.items()):
        for item in table.items.values():
            if item.popen.poll() is None:
                _stop(item.popen)
            try:
                _refresh(Shell(runtime=runtime, settings=ShellSettings()), item)
            except Exception:  # the program is ending: keep stopping the others
                pass
            remove_scratch(item.folder)
