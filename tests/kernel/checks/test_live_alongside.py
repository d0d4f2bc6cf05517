"""A verify runs its live check while its fresh-import check runs, and a fresh-import check
that was stopped stops the live one rather than waiting for it."""

from __future__ import annotations

import socket
import textwrap
import threading
import time
import uuid
from collections.abc import Callable

import pytest

from liveforge import Runtime
from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.checks import _livefork

pytestmark = pytest.mark.skipif(not _livefork.available(), reason="needs os.fork")

FRESH = "sys.argv[0].startswith('<verify')"  # a live fork has the front end's argv


def test_the_live_check_runs_while_the_fresh_one_does(rt: Runtime) -> None:
    """Each check connects to a loopback listener that answers only once both are
    connected: run one after the other, the first would wait for the second forever."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(60)
    roles: list[bytes] = []

    def both() -> None:
        connections = []
        try:
            for _ in range(2):
                connection, _ = listener.accept()
                roles.append(connection.recv(16))
                connections.append(connection)
            for connection in connections:
                connection.sendall(b"go")
        finally:
            for connection in connections:
                connection.close()

    thread = threading.Thread(target=both, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    code = textwrap.dedent(f"""
        import socket, sys
        with socket.create_connection(("127.0.0.1", {port}), timeout=30) as s:
            s.sendall(b"fresh" if {FRESH} else b"live")
            answer = s.recv(16)
        answer
    """)
    try:
        result = rt.verify(code, network=True, timeout=60)
    finally:
        listener.close()
        thread.join(10)
    assert result.ok and result.value_repr == "b'go'", result.summary()
    assert result.live is not None and result.live.value_repr == "b'go'"
    assert sorted(roles) == [b"fresh", b"live"]


@pytest.mark.skipif(probe()[0] < 1, reason="needs Linux with Landlock")
def test_a_fresh_check_that_crashed_stops_the_live_one(
    rt: Runtime, marked: Callable[[str], set[int]]
) -> None:
    """Nothing to compare with: the live check (here one that would run a minute) is
    killed with what it started, not waited for."""
    marker = f"300.{uuid.uuid4().int % 10**9}"
    code = textwrap.dedent(f"""
        import os, signal, subprocess, sys, time
        if {FRESH}:
            os.kill(os.getpid(), signal.SIGKILL)
        subprocess.Popen(["sleep", "{marker}"])
        time.sleep(60)
    """)
    started = time.monotonic()
    result = rt.verify(code, timeout=90)
    assert result.status in ("crashed", "killed_memory") and result.live is None, result.summary()
    assert time.monotonic() - started < 30
    assert rt.checks.run(result.run_id).status == result.status  # recorded all the same
    deadline = time.monotonic() + 2
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marked(marker)


def test_the_live_check_runs_in_the_main_thread_as_a_fresh_one_does(rt: Runtime) -> None:
    """The fork is made from a thread; in it that thread is the main one, by name too."""
    result = rt.verify(
        "import threading\n"
        "(threading.current_thread().name, threading.current_thread() is threading.main_thread())"
    )
    assert result.ok and result.value_repr == "('MainThread', True)", result.summary()
    assert result.live is not None and result.live.value_repr == result.value_repr


def test_the_record_of_a_verify_holds_its_live_check(rt: Runtime) -> None:
    """The result is written once, with the live check in it."""
    result = rt.verify("6 * 7")
    assert result.ok and result.live is not None, result.summary()
    stored = rt.checks.run(result.run_id)
    assert stored.live is not None and stored.live.value_repr == "42"
    assert stored.model_dump() == result.model_dump()


def test_the_live_check_names_the_line_of_a_bare_assert(rt: Runtime) -> None:
    """The live check's line says a bare `assert` by its line, as the fresh one does."""
    result = rt.verify("x = 1\nassert x == 2")
    assert result.live is not None
    assert "(AssertionError at line 2 of the snippet: assert x == 2)" in result.live.headline()
    assert result.message == "AssertionError at line 2 of the snippet: assert x == 2"
