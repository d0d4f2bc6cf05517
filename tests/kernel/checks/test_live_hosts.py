"""Live checks join namespaces made ahead (`_hosts`): the check is still alone in a pid
namespace with its own /proc and the project copy-on-write, what it starts dies with it, a
host that is gone is not fatal, and nothing of the hosts holds a key or outlives the front
end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_tree import alive, descendants
from sandbox_support import NAMESPACE, SETSID_DAEMONS, in_namespace

from liveforge.kernel.boundary import _namespaces, _overlay
from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.checks import _livefork
from liveforge.kernel.checks._hosts import Host, Hosts
from liveforge.kernel.checks._sandbox import Sandbox

pytestmark = [
    pytest.mark.skipif(not _livefork.available(), reason="needs os.fork"),
    pytest.mark.skipif(probe()[0] < 6, reason="needs Landlock ABI >= 6"),
    pytest.mark.skipif(_overlay.probe() is not None, reason="needs user namespaces"),
    pytest.mark.skipif(not Hosts.available(), reason="needs pidfds"),
]


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("value = 1\n")
    with Sandbox(tmp_path) as box:
        yield box


def joined(sandbox: Sandbox, setup: str, expression: str) -> tuple[_livefork.LiveCheck, object]:
    """A check that joined a host has its parent (the live fork) outside its pid namespace,
    so its parent pid reads 0 (pid 1 is the parent of one that entered its own).
    `setup`, then `expression`'s value, from the first live check that joined a host
    (hosts are made in the background: the first checks may enter namespaces of their own)."""
    code = f"import os\n{setup}\n(os.getppid() == 0, ({expression}))"
    for _ in range(50):
        check = sandbox.run_live(code, timeout=30)
        assert check.ok, check
        was_joined, value = eval(check.value_repr or "")
        if was_joined:
            return check, value
        time.sleep(0.05)
    raise AssertionError("no live check joined a host made ahead")


def test_a_joined_live_check_is_alone_in_its_namespaces_and_sees_the_project_copy_on_write(
    sandbox: Sandbox,
) -> None:
    setup = textwrap.dedent("""
        open("pkg/mod.py", "a").write("planted = True\\n")
        procs = sorted(name for name in os.listdir("/proc") if name.isdigit())
    """)
    expression = "os.getpid(), procs, os.getcwd(), open('pkg/mod.py').read()"
    check, (pid, procs, cwd, text) = joined(sandbox, setup, expression)  # type: ignore[misc]
    assert (pid, procs) == (2, ["1", "2"])
    assert cwd == str(sandbox.project_root) and text.endswith("planted = True\n")
    assert (sandbox.project_root / "pkg" / "mod.py").read_text() == "value = 1\n"
    assert check.boundary is not None and check.boundary.processes == "pid namespace"
    assert check.boundary.project == "copy-on-write"
    assert check.boundary.project_writes == ["pkg/mod.py"]


@pytest.mark.skipif(os.geteuid() != 0, reason="entering a host's pid namespace needs root")
def test_a_live_check_is_forked_straight_into_the_hosts_pid_namespace(sandbox: Sandbox) -> None:
    """Where the front end may enter a host's pid namespace, the process it forks is the
    check itself, in that namespace (one fork of the front end, not a relay that forks
    again), and the forking thread is back in its own pid namespace afterwards."""
    own = os.readlink("/proc/self/ns/pid")
    forked: list[str] = []
    for _ in range(50):
        forked.clear()
        check = sandbox.run_live(
            "import os\nos.getppid() == 0",
            timeout=30,
            on_start=lambda pid: forked.append(os.readlink(f"/proc/{pid}/ns/pid")),
        )
        assert check.ok, check
        if check.value_repr == "True":  # it joined a host
            break
        time.sleep(0.05)
    else:
        raise AssertionError("no live check joined a host made ahead")
    assert forked and forked[0] != own
    assert os.readlink("/proc/thread-self/ns/pid_for_children") == own


def test_what_a_joined_live_check_starts_dies_with_it(sandbox: Sandbox) -> None:
    _, namespace = joined(sandbox, SETSID_DAEMONS, NAMESPACE)
    assert isinstance(namespace, str) and in_namespace(namespace) == []  # it ends asynchronously


def test_a_host_that_is_gone_leaves_the_check_to_make_its_own_namespaces(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    hosts = Hosts()
    try:
        host = _wait_for_host(hosts)
        host.end()  # its pid 1 is killed: joining it fails
        monkeypatch.setattr(sandbox._hosts, "take", lambda: host)
        check = sandbox.run_live("import os\n(os.getppid() == 0, os.getpid())", timeout=30)
    finally:
        hosts.close()
    assert check.ok and check.value_repr == "(False, 2)", check
    assert check.boundary is not None and check.boundary.processes == "pid namespace"


def _wait_for_host(hosts: Hosts) -> Host:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        host = hosts.take()
        if host is not None:
            return host
        time.sleep(0.02)
    raise AssertionError(f"no host was made: {hosts.refused}")


def test_the_host_maker_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LFTEST_API_KEY", "sk-hosts-secret-123")
    hosts = Hosts()
    try:
        _wait_for_host(hosts).end()
        assert hosts._process is not None
        environ = Path(f"/proc/{hosts._process.pid}/environ").read_bytes()
    finally:
        hosts.close()
    assert b"sk-hosts-secret-123" not in environ and b"PATH=" in environ


FRONT_END = textwrap.dedent("""
    import sys, time
    from liveforge.kernel.checks._hosts import Hosts
    hosts = Hosts()
    while hosts.take() is None:
        time.sleep(0.02)
    hosts.refill()
    while not hosts._stock:  # the next one, made ahead
        hosts._receive(1.0)
    print(hosts._process.pid, flush=True)
    time.sleep(300)
""")


def test_the_maker_and_its_hosts_end_when_the_front_end_is_killed() -> None:
    front = subprocess.Popen([sys.executable, "-c", FRONT_END], stdout=subprocess.PIPE, text=True)
    try:
        assert front.stdout is not None
        maker = int(front.stdout.readline())
        tree = {maker} | descendants(maker)
        assert len(tree) >= 3, tree  # the maker, a host process and its pid 1
        front.send_signal(signal.SIGKILL)
        front.wait()
        deadline = time.monotonic() + 2
        while [pid for pid in tree if alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in tree if alive(pid)] == []
    finally:
        front.kill()
        front.wait()


def test_a_stuck_maker_is_replaced() -> None:
    """A maker that makes no host within `wait` is killed; the next take starts a new one
    (until then the checks enter namespaces of their own)."""
    hosts = Hosts(wait=0.2)
    try:
        _wait_for_host(hosts).end()
        assert hosts._process is not None
        hosts.refill()
        while not hosts._stock:  # the next one, made ahead
            hosts._receive(1.0)
        stuck = hosts._process
        stuck.send_signal(signal.SIGSTOP)
        hosts._stock.pop().end()
        assert hosts.take() is None and stuck.poll() is not None  # killed, not left stopped
        _wait_for_host(hosts).end()
        assert hosts._process is not None and hosts._process.pid != stuck.pid
    finally:
        hosts.close()


def _in_host(sandbox: Sandbox, code: str) -> object:
    """The value of `code` from the first fresh-import check forked into a host (its parent,
    the template, is outside its pid namespace: its parent pid reads 0). Hosts are offered
    to the template after a check: the first checks may enter namespaces of their own."""
    for _ in range(50):
        result = sandbox.verify(f"import os\n{code}\n(os.getppid() == 0, __value__)")
        assert result.ok, result.summary()
        in_host, value = eval(result.value_repr or "")
        if in_host:
            assert result.boundary is not None, result
            assert result.boundary.processes == "pid namespace", result.boundary
            return value
        time.sleep(0.05)
    raise AssertionError("no fresh-import check was forked into a host made ahead")


@pytest.mark.skipif(not _namespaces.may_fork_into(), reason="needs CAP_SYS_ADMIN")
def test_a_fresh_import_check_is_forked_into_a_host_alone_and_what_it_starts_dies_with_it(
    sandbox: Sandbox,
) -> None:
    assert sandbox.checks_join_hosts
    setup = textwrap.dedent("""
        open("pkg/mod.py", "a").write("planted = True\\n")
        procs = sorted(name for name in os.listdir("/proc") if name.isdigit())
    """)
    read = "open('pkg/mod.py').read()"
    value = _in_host(sandbox, f"{setup}\n__value__ = (os.getpid(), procs, {read})")
    assert value == (2, ["1", "2"], "value = 1\nplanted = True\n")
    assert (sandbox.project_root / "pkg" / "mod.py").read_text() == "value = 1\n"
    namespace = _in_host(sandbox, f"{SETSID_DAEMONS}\n__value__ = {NAMESPACE}")
    assert isinstance(namespace, str) and in_namespace(namespace) == []


def test_the_maker_makes_each_pid_1_in_its_namespaces_and_it_lives_no_longer_than_its_holder() -> (
    None
):
    """No relay between the maker and a host's pid 1 (it is born in its namespaces), and a
    host whose every holder let go ends (a template killed with hosts it was offered)."""
    hosts = Hosts()
    try:
        host = _wait_for_host(hosts)
        assert hosts._process is not None
        maker = hosts._process.pid
        init = int(
            next(
                line.split()[1]
                for line in Path(f"/proc/self/fdinfo/{host.pidfd}").read_text().splitlines()
                if line.startswith("Pid:")
            )
        )
        status = Path(f"/proc/{init}/status").read_text()
        nspid = next(line for line in status.splitlines() if line.startswith("NSpid:"))
        assert nspid.split()[1:] == [str(init), "1"]
        assert f"PPid:\t{maker}" in status
        host.close()  # let go without a kill: its lifeline ends it
        deadline = time.monotonic() + 10
        while alive(init) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(init)
    finally:
        hosts.close()


def test_a_host_put_back_is_the_next_one_taken() -> None:
    """A host taken for an offer that came too late (the template got one meanwhile) is
    kept, not killed: the next check takes it."""
    hosts = Hosts()
    try:
        host = _wait_for_host(hosts)
        hosts.put_back(host)
        again = hosts.take(wait=False)
        assert again is host
        assert again is not None and signal.pidfd_send_signal(again.pidfd, 0) is None  # alive
    finally:
        hosts.close()


def test_hosts_closed_and_used_again_still_make_hosts() -> None:
    """A sandbox closed and used again (`Runtime.close`, then a check) starts its maker
    again each time: a deliberate close is not a maker that kept exiting."""
    hosts = Hosts()
    try:
        for _ in range(4):
            _wait_for_host(hosts).end()
            hosts.close()
        assert hosts.refused is None
    finally:
        hosts.close()
