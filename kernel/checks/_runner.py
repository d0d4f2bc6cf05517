"""One sandbox run at the process level: pipes, waiting, the timeout and the kill.

The parent creates three pipes (stdout, stderr, result), hands their write ends to the template
with the request, and pumps the read ends until the child has exited: output streams into
capped files (`_capture`), the child's JSON outcome is collected from the result pipe. At the
timeout the child's whole process group is killed with SIGKILL. If the template stops
answering or dies, the run is reported as such and the template is discarded.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from liveforge.kernel.boundary._secrets import Scrubber
from liveforge.kernel.checks._capture import CappedSink
from liveforge.kernel.checks._template import TemplateProcess

KILL_GRACE = 5.0
PIPE_GRACE = 0.5
RESULT_LIMIT = 16 << 20


@dataclass
class RunExit:
    """How the child ended, as seen by the parent."""

    pid: int | None = None
    exit_code: int | None = None
    timed_out: bool = False
    template_lost: bool = False
    truncated: bool = False
    left_running: int = 0
    """Processes of the check still running when it ended (killed after it)."""
    stopped: bool = False
    """The run was stopped (`Sandbox.stop_running`) while it ran."""
    wants_host: bool = False
    """The template holds no namespaces made ahead for its next check (`Sandbox` offers
    it some where it has them)."""
    outcome: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""


class _Pumps:
    """The read ends of a run's pipes and where their bytes go."""

    def __init__(self, folder: Path, output_cap: int, scrubber: Scrubber | None) -> None:
        self.sinks: dict[int, CappedSink] = {}
        self.write_ends: list[int] = []
        for name in ("stdout", "stderr"):
            read_end, write_end = os.pipe()
            self.sinks[read_end] = CappedSink(
                folder / f"{name}.txt", head_bytes=output_cap, scrubber=scrubber
            )
            self.write_ends.append(write_end)
        self.result_fd, result_write = os.pipe()
        self.write_ends.append(result_write)
        self.result = bytearray()
        self.open = {*self.sinks, self.result_fd}

    def take(self, fd: int) -> None:
        """Read what is available on `fd`; at end of stream, stop watching it."""
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            self.open.discard(fd)
        elif fd == self.result_fd:
            if len(self.result) < RESULT_LIMIT:
                self.result += chunk
        else:
            self.sinks[fd].write(chunk)

    def close_write_ends(self) -> None:
        for fd in self.write_ends:
            os.close(fd)
        self.write_ends = []

    def close(self) -> None:
        self.close_write_ends()
        for fd, sink in self.sinks.items():
            sink.close()
            os.close(fd)
        os.close(self.result_fd)

    def outcome(self) -> dict[str, Any]:
        try:
            data = json.loads(bytes(self.result))
        except ValueError:
            return {}
        if not isinstance(data, dict):
            return {}
        data.pop("ended", None)
        return data

    def ended(self) -> tuple[int, int] | None:
        """(exit code, processes left running) as a child in a pid namespace said them
        with its whole result, once all its output has ended; else None."""
        if self.open:
            return None
        try:
            said = json.loads(bytes(self.result)).get("ended")
            return int(said["exit_code"]), int(said["left_running"])
        except (ValueError, AttributeError, TypeError, KeyError):
            return None


def run_child(
    template: TemplateProcess,
    request: dict[str, Any],
    folder: Path,
    *,
    timeout: float,
    output_cap: int,
    while_running: Callable[[], None],
    scrubber: Scrubber | None = None,
    stopped: Callable[[], bool] | None = None,
) -> RunExit:
    """Fork a child for `request` from `template` and wait for it (at most `timeout` s).

    `while_running` is called once the child has been asked for, so the record can be
    written while the child works; `scrubber` keeps secret values out of the output files.
    `stopped` says the run was stopped before its child started: it is killed as it does.
    """
    pumps = _Pumps(folder, output_cap, scrubber)
    ended = RunExit()
    selector = selectors.DefaultSelector()
    try:
        try:
            template.start_run(request, pumps.write_ends)
        except OSError:
            ended.template_lost = True
        finally:
            pumps.close_write_ends()
        while_running()
        if not ended.template_lost:
            for fd in pumps.open:
                selector.register(fd, selectors.EVENT_READ)
            selector.register(template.sock, selectors.EVENT_READ)
            try:
                _wait(template, selector, pumps, ended, time.monotonic() + timeout, stopped)
                ended.stopped = stopped is not None and stopped()
            except BaseException:  # e.g. Ctrl-C in the parent: the run must not live on
                kill_group(ended.pid)
                raise
    finally:
        selector.close()
        pumps.close()
    ended.outcome = pumps.outcome()
    ended.stdout, ended.stderr = (sink.text() for sink in pumps.sinks.values())
    ended.truncated = any(sink.dropped for sink in pumps.sinks.values())
    return ended


def _wait(
    template: TemplateProcess,
    selector: selectors.BaseSelector,
    pumps: _Pumps,
    ended: RunExit,
    deadline: float,
    stopped: Callable[[], bool] | None,
) -> None:
    """Pump pipes and control messages until the child has exited (or was killed at the
    deadline, or as it started when the run was stopped)."""
    control = template.sock.fileno()
    exit_seen = 0.0
    while True:
        now = time.monotonic()
        if ended.exit_code is not None and (not pumps.open or now - exit_seen > PIPE_GRACE):
            return
        if ended.pid is not None and (said := pumps.ended()) is not None:
            # the check said how it ends with its result: its exit, which the template
            # reports later (the next run skips that message, below), is nobody's wait
            ended.exit_code, ended.left_running = said
            return
        if not ended.timed_out and now >= deadline:
            ended.timed_out = True
            kill_group(ended.pid)
            deadline = now + KILL_GRACE
        elif ended.timed_out and now >= deadline and ended.exit_code is None:
            ended.template_lost = True  # the template did not report the killed child
            kill_group(ended.pid)
            return
        wait = max(0.0, deadline - now)
        if ended.exit_code is not None:
            wait = min(wait, PIPE_GRACE)
        for key, _ in selector.select(wait):
            if key.fd != control:
                pumps.take(key.fd)
                if key.fd not in pumps.open:
                    selector.unregister(key.fd)
                continue
            chunk = template.sock.recv(1 << 16)
            if not chunk:
                ended.template_lost = True
                kill_group(ended.pid)
                return
            template.channel.feed(chunk)
            while (message := template.channel.pop()) is not None:
                if "exit_code" in message and ended.pid is None:
                    continue  # the last run's, which ended before its exit was reported
                if "pid" in message and stopped is not None and stopped():
                    kill_group(message["pid"])
                ended.pid = message.get("pid", ended.pid)
                ended.wants_host = message.get("wants_host", ended.wants_host)
                if "exit_code" in message:
                    ended.exit_code = message["exit_code"]
                    ended.left_running = message.get("left_running", 0)
                    exit_seen = time.monotonic()


def kill_group(pid: int | None) -> None:
    """SIGKILL the child's process group (the child and everything it spawned)."""
    if pid is None:
        return
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except OSError:
            continue
