"""A check made ahead of its run: the sandbox template forks the next check while it is
idle, so a request only sends the code to a process that waits for it.

    spare = Spare.make(boundary, LineChannel, template_pid, run, close=[channel.sock])
    spare = Spare.make(..., host=host)       # or in namespaces made ahead (`_hosts.Host`)
    ...                                      # later, when a request in namespaces comes:
    if spare.start(request, fds, ruleset_fd):
        pid = spare.pid                      # wait for it as for any forked child
    spare.discard()                          # or: a request without namespaces came

Made in a host (`_hosts.Host`: namespaces the front end's host maker made ahead) and offered
to the template, the spare is forked straight into the host's pid namespace and joins its
user and mount namespaces (`_namespaces.fork_into`, `join_forked`): one fork of the
template, which needs CAP_SYS_ADMIN (root). Else the spare is the template's child that
entered namespaces of its own (`_namespaces.enter`: user, mount and pid, ids mapped, pid 1
forked with a /proc of its own) and returned in pid 2, the check: three forks of the
template (the relay, pid 1, the check). A request that comes when no spare is ready is
forked into the host the template holds, if it holds one (`Host.fork`).

Either way the check waits on a socket for its request. Nothing of the project is mounted
yet: the copy-on-write view is mounted when the request comes (`_boundary.contain` with
`entered`), so the check sees the project as it is when it runs, not as it was when the
spare was made; limits, capabilities and Landlock are applied then as well, from the
request's policy. A spare whose template dies dies with it (parent-death signal, or the
lifeline of a check forked into a host).

Standard library only: the template loads this file by path.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

__all__ = ["Spare"]

NOT_SENT = ("handshake", "ruleset_fd")  # what a request holds for a fork, not for a spare


class Spare:
    """The template's side of one check process made ahead of its run."""

    def __init__(
        self, pid: int, handshake: Any, channel: Any, mapped: bool, host: Any = None
    ) -> None:
        self.pid = pid
        self.handshake = handshake
        self.channel = channel
        #: the check is in namespaces of its own (its parent wrote its id maps)
        self.mapped = mapped
        #: the namespaces made ahead it joined, if it did (ended after its run)
        self.host = host

    @classmethod
    def make(
        cls,
        boundary: Any,
        channel_class: Callable[[socket.socket], Any],
        template_pid: int,
        run: Callable[[dict[str, Any], list[int]], NoReturn],
        close: Iterable[socket.socket] = (),
        host: Any = None,
    ) -> Spare:
        """Fork a check that enters its namespaces now (joins `host`'s where it can) and
        waits for its request; in the check, `run(request, fds)` runs the request (the
        request carries `entered`)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if host is not None:
            pid = host.fork()
            if pid == 0:
                for sock in (ours, *close):
                    sock.close()
                entered = host.join()
                _wait_joined(entered, channel_class(theirs), run)
            if pid is not None:
                theirs.close()
                return cls(pid, None, channel_class(ours), False, host)
            host.end()  # gone, or not ours to enter: a spare of its own instead
        handshake = boundary.Handshake()
        pid = os.fork()
        if pid == 0:
            for sock in (ours, *close):
                sock.close()
            _wait_for_request(boundary, handshake, channel_class(theirs), template_pid, run)
        theirs.close()
        with contextlib.suppress(OSError):  # before the spare forks: its tree is one group
            os.setpgid(pid, pid)
        handshake.parent_side()
        return cls(pid, handshake, channel_class(ours), handshake.serve(pid))

    def start(self, request: dict[str, Any], fds: list[int], ruleset_fd: int | None) -> bool:
        """Send the request and its fds (stdout, stderr, result; the prepared ruleset) to
        the waiting check; False when it is gone (the caller forks a check as usual)."""
        message = {key: value for key, value in request.items() if key not in NOT_SENT}
        message["ruleset"] = ruleset_fd is not None
        sent = [*fds] + ([ruleset_fd] if ruleset_fd is not None else [])
        try:
            self.channel.send(message, fds=sent)
        except OSError:
            self.discard()
            return False
        finally:
            self.channel.sock.close()
        return True

    def discard(self) -> None:
        """End the waiting check and everything of its namespaces; reap it."""
        self.channel.sock.close()
        for kill, target in ((os.killpg, self.pid), (os.kill, self.pid)):
            with contextlib.suppress(OSError):
                kill(target, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        if self.handshake is not None:
            self.handshake.close()
        if self.host is not None:
            self.host.end()


def _wait_joined(
    entered: Any, channel: Any, run: Callable[[dict[str, Any], list[int]], NoReturn]
) -> NoReturn:
    """In a spare forked into a host (and joined to it): wait for the request and run it;
    exit quietly when the template closes the channel instead."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    _run_request(entered, channel, run)


def _wait_for_request(
    boundary: Any,
    handshake: Any,
    channel: Any,
    template_pid: int,
    run: Callable[[dict[str, Any], list[int]], NoReturn],
) -> NoReturn:
    """In the forked spare: enter the namespaces, then (in the check) wait for the request
    and run it; exit quietly when the template closes the channel instead."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    processes = boundary._processes
    processes.die_with_parent(template_pid)
    handshake.child_side()
    entered = boundary._namespaces.enter(handshake, None)
    _run_request(entered, channel, run)


def _run_request(
    entered: Any, channel: Any, run: Callable[[dict[str, Any], list[int]], NoReturn]
) -> NoReturn:
    """In the check: wait for the request and run it in what was `entered`; exit quietly
    when the template closes the channel instead."""
    request, fds = channel.receive(max_fds=4)
    channel.sock.close()
    if request is None:
        os._exit(0)
    ruleset_fd = fds.pop() if request.pop("ruleset") else None
    run({**request, "entered": entered, "ruleset_fd": ruleset_fd}, fds)
