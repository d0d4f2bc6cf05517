"""The sandbox tests' own judge of "nothing a check started still runs": a pid namespace
that has ended is not mistaken for a new one the kernel gave its number to."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest
from process_tree import children
from sandbox_support import in_namespace, namespace_of

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")


def _namespace() -> tuple[subprocess.Popen[bytes], int]:
    """A pid namespace of its own with `sleep` as its pid 1: (unshare, the sleep's pid here)."""
    user = [] if os.geteuid() == 0 else ["--user"]
    argv = ["unshare", *user, "--pid", "--fork", "sleep", "60"]
    process = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
    ours, deadline = os.readlink("/proc/self/ns/pid"), time.monotonic() + 10
    while time.monotonic() < deadline:
        for pid in children(process.pid):
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") != ours:
                    return process, pid
            except OSError:
                continue
        time.sleep(0.005)
    process.kill()
    raise AssertionError(f"unshare made no pid namespace: {process.wait()}")


def _end(namespace: tuple[subprocess.Popen[bytes], int]) -> None:
    process, init = namespace
    os.kill(init, signal.SIGKILL)  # unshare reaps it and exits: the namespace is freed
    process.wait()


def test_an_ended_namespace_is_not_taken_for_a_new_one_with_its_number() -> None:
    ended = _namespace()
    name = namespace_of(ended[1])
    _end(ended)
    made = []
    try:
        # the kernel gives the lowest free number to the next namespace: keep those made
        # until one gets the ended namespace's number (others on the machine may take it)
        for _ in range(100):
            made.append(_namespace())
            if os.readlink(f"/proc/{made[-1][1]}/ns/pid") == name.split(" ")[0]:
                break
        else:
            pytest.skip("no new pid namespace was given the ended one's number")
        newer = made[-1][1]
        assert [line.split(" ")[1] for line in in_namespace(namespace_of(newer), 0)] == [str(newer)]
        assert in_namespace(name, wait=0) == []
    finally:
        for namespace in made:
            _end(namespace)
