"""Hostile checks meet a real boundary: each is contained, reported, and changes nothing.

Every test runs a real hostile snippet in a real sandbox child (Landlock on this kernel),
then checks that nothing changed on disk outside the scratch folder and that the same
sandbox still answers from its template.
"""

from __future__ import annotations

import os
import signal
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sandbox_support import (
    NAMESPACE,
    in_namespace,
    loopback_listener,
    process_gone,
    snapshot_tree,
)

from liveforge.kernel.boundary import _overlay
from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.boundary._policy import CheckSettings
from liveforge.kernel.checks._sandbox import Sandbox

pytestmark = pytest.mark.skipif(probe()[0] < 6, reason="needs Landlock ABI >= 6")


class Places:
    """The project a sandbox works on and a folder outside it, with their contents."""

    def __init__(self, root: Path) -> None:
        self.project = root / "project"
        self.outside = root / "outside"
        (self.project / "pkg").mkdir(parents=True)
        (self.project / "pkg" / "__init__.py").write_text("")
        (self.project / "pkg" / "mod.py").write_text("def f(x):\n    return x + 1\n")
        self.outside.mkdir()
        (self.outside / "notes.txt").write_text("keep me\n")

    def snapshot(self) -> dict[str, dict[str, bytes]]:
        return {str(top): snapshot_tree(top) for top in (self.project, self.outside)}


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Places:
    return Places(tmp_path_factory.mktemp("boundary"))


@pytest.fixture(scope="module")
def sandbox(places: Places) -> Iterator[Sandbox]:
    with Sandbox(places.project, settings=CheckSettings(memory_mb=512)) as box:
        yield box


@pytest.fixture(autouse=True)
def nothing_changes(places: Places, sandbox: Sandbox) -> Iterator[None]:
    """Files outside the scratch stay as they were; the sandbox keeps its template."""
    before = places.snapshot()
    yield
    assert places.snapshot() == before
    after = sandbox.verify("6 * 7")
    assert (after.status, after.value_repr) == ("passed", "42")


def denied(sandbox: Sandbox, code: str) -> str:
    """Run `code`, expect the boundary to refuse it; the result's message."""
    result = sandbox.verify(textwrap.dedent(code))
    assert not result.ok and result.exc_type == "PermissionError", result.summary()
    assert "the check's boundary denied it" in result.message
    assert result.boundary is not None and result.boundary.isolation == "landlock"
    return result.message


def test_writes_appends_deletes_and_new_files_in_the_project_stay_in_the_checks_view(
    sandbox: Sandbox, places: Places
) -> None:
    """The check sees the project copy-on-write: its writes work, are listed in the record,
    and are discarded (where the kernel offers no view, the project is read-only)."""
    module = places.project / "pkg" / "mod.py"
    code = f"""
        import os
        open({str(module)!r}, 'a').write('import os\\n')
        open({str(places.project / "planted.py")!r}, 'x').write('x = 1')
        os.remove({str(places.project / "pkg" / "__init__.py")!r})
        os.rename({str(module)!r}, {str(module) + ".bak"!r})
        sorted(os.listdir({str(places.project / "pkg")!r}))
    """
    result = sandbox.verify(textwrap.dedent(code))
    assert result.boundary is not None
    if result.boundary.project != "copy-on-write":
        assert result.boundary.project == "read-only" and result.boundary.project_reason
        denied(sandbox, f"open({str(module)!r}, 'a').write('import os\\n')")
        return
    assert result.ok and result.value_repr == "['mod.py.bak']", result.summary()
    assert result.boundary.project_writes == ["pkg/mod.py.bak", "planted.py"]
    assert result.boundary.project_deletes == ["pkg/__init__.py", "pkg/mod.py"]
    assert "4 project paths changed in its view (discarded)" in result.summary()
    again = sandbox.verify(f"open({str(module)!r}).read()")
    assert again.value_repr == repr("def f(x):\n    return x + 1\n")


def test_writes_and_deletes_outside_the_project_are_denied(
    sandbox: Sandbox, places: Places
) -> None:
    notes = places.outside / "notes.txt"
    denied(sandbox, f"open({str(notes)!r}, 'a').write('more')")
    denied(sandbox, f"import os\nos.unlink({str(notes)!r})")
    denied(sandbox, f"open({str(places.outside / 'planted')!r}, 'w').write('x')")
    home = os.path.expanduser("~")  # a check's own HOME is in its scratch folder
    if os.path.isdir(home) and not home.startswith(tempfile.gettempdir()):
        denied(sandbox, f"open({os.path.join(home, '.planted')!r}, 'w')")


def test_the_scratch_folder_tempfiles_and_home_are_writable_and_gone_after_the_run(
    sandbox: Sandbox,
) -> None:
    """Temporary files and the home folder (settings, histories) are the check's own."""
    code = "import tempfile, os\nf = tempfile.NamedTemporaryFile(delete=False)\nf.write(b'x')\n"
    code += "f.close()\nopen(os.path.expanduser('~/.history'), 'w').write('x')\n"
    code += "f.name, os.path.expanduser('~')"
    result = sandbox.verify(code)
    assert result.ok, result.summary()
    scratch, home = eval(result.value_repr or "''")
    assert result.boundary is not None and result.boundary.writable[0] in scratch
    assert home.startswith(result.boundary.writable[0])
    assert not os.path.exists(scratch) and not os.path.exists(home)


def test_the_environment_of_ancestors_is_unreadable(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_BOUNDARY_API_KEY", "sk-fake-boundary-0123456789")
    message = denied(
        sandbox,
        f"import os\nfor pid in (os.getppid() or 1, {os.getpid()}, 1):\n"
        "    print(open(f'/proc/{pid}/environ').read())",
    )
    assert "sk-fake" not in message


def test_credentials_on_the_machine_are_unreadable(sandbox: Sandbox) -> None:
    """Password hashes, private TLS keys and the home folder stay out of reach, root or not."""
    denied(sandbox, "open('/etc/shadow').read()")
    for folder in ("/etc/ssl/private", os.path.expanduser("~")):
        if os.path.isdir(folder) and not folder.startswith(tempfile.gettempdir()):
            denied(sandbox, f"import os\nos.listdir({folder!r})")
    assert sandbox.verify("open('/etc/ssl/certs/ca-certificates.crt').read(1)").ok


def test_signals_to_the_parent_and_the_front_end_are_denied(sandbox: Sandbox) -> None:
    """Processes outside the check's tree are out of reach: not signalled (Landlock) or not
    even visible (its own pid namespace)."""
    sandbox.verify("0")
    template = sandbox.template_pid
    for code in (
        # its parent, or pid 1 of its namespace where the parent is outside (a host's)
        "import os, signal\nos.kill(os.getppid() or 1, signal.SIGKILL)",
        f"import os\nos.kill({os.getpid()}, 0)",
        f"import os\nos.kill({template}, 9)",
    ):
        result = sandbox.verify(code)
        assert result.exc_type in ("PermissionError", "ProcessLookupError"), result.summary()
    assert sandbox.template_pid == template


def test_tcp_to_a_loopback_listener_is_denied_unless_asked_for(sandbox: Sandbox) -> None:
    with loopback_listener() as (port, accepted, thread):
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).close()"
        message = denied(sandbox, code)
        assert "network off" in message and not accepted
        allowed = sandbox.verify(code, network=True)
        thread.join(5)
    assert allowed.ok and allowed.boundary is not None and allowed.boundary.network
    assert accepted


def test_udp_and_sctp_sockets_are_denied_with_the_network_off(sandbox: Sandbox) -> None:
    """Landlock covers TCP; the rest of the internet protocols are refused by seccomp."""
    denied(sandbox, "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM)")
    denied(sandbox, "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_STREAM, 132)")
    local = sandbox.verify("import socket\nsocket.socketpair()[0].close()")
    assert local.ok, local.summary()


def test_fifty_children_and_setsid_grandchildren_are_killed_when_the_check_ends(
    sandbox: Sandbox,
) -> None:
    code = textwrap.dedent(f"""
        import os, subprocess, time
        pids = []
        for _ in range(50):
            pid = os.fork()
            if pid == 0:
                time.sleep(300)
                os._exit(0)
            pids.append(pid)
        for _ in range(3):
            pids.append(subprocess.Popen(["sleep", "300"], start_new_session=True).pid)
        if os.fork() == 0:  # a daemon: double fork, new session, parent gone
            os.setsid()
            if os.fork() == 0:
                time.sleep(300)
            os._exit(0)
        pids, {NAMESPACE}
    """)
    result = sandbox.verify(code)
    assert result.ok and result.boundary is not None, result.summary()
    pids, namespace = eval(result.value_repr or "[]")
    assert len(pids) == 53
    if result.boundary.processes == "pid namespace":  # its pids mean nothing out here
        assert in_namespace(namespace) == []
    else:
        assert all(process_gone(pid) for pid in pids)


@pytest.mark.parametrize("isolation", [True, False])
def test_processes_left_running_are_counted_killed_and_reported(
    sandbox: Sandbox, places: Places, isolation: bool
) -> None:
    """Three setsid `sleep`s and a forked child outlive the snippet (an exited child not
    yet reaped does not count): the result says 4 were still running and were killed,
    whether its pid namespace took them down or (isolation off) the template did."""
    code = textwrap.dedent(f"""
        import os, subprocess, time
        pids = [
            subprocess.Popen(["sleep", "300"], start_new_session=True).pid for _ in range(3)
        ]
        if (child := os.fork()) == 0:
            time.sleep(300)
            os._exit(0)
        if (done := os.fork()) == 0:
            os._exit(0)
        os.waitid(os.P_PID, done, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
        [*pids, child], {NAMESPACE}
    """)
    box = sandbox if isolation else Sandbox(places.project, settings=CheckSettings(isolation=False))
    try:
        result = box.verify(code)
        quiet = box.verify("1")
    finally:
        if box is not sandbox:
            box.close()
    assert result.ok and result.boundary is not None, result.summary()
    pids, namespace = eval(result.value_repr or "")
    if result.boundary.processes == "pid namespace":
        assert in_namespace(namespace) == []
    else:
        assert all(process_gone(pid) for pid in pids)
    note = "4 processes still running at the end were killed"
    assert result.boundary.processes_killed == 4 and note in result.boundary.notes
    assert f"boundary: {result.boundary.line()}" in result.summary() and note in result.summary()
    kept = box.run(result.run_id)  # the record
    assert kept.boundary is not None and kept.boundary.processes_killed == 4
    assert quiet.boundary is not None and quiet.boundary.processes_killed == 0
    assert "still running" not in quiet.summary()


@pytest.mark.skipif(_overlay.probe() is not None, reason="needs namespaces of the check's own")
def test_killing_the_template_during_a_check_leaves_no_process_of_it(
    places: Places, marked: Callable[[str], set[int]]
) -> None:
    """SIGKILL the template while its check runs setsid grandchildren: the check's pid
    namespace (or parent-death signals) takes all of them down within 2 s."""
    marker = f"300.{uuid.uuid4().int % 10**9}"
    code = textwrap.dedent(f"""
        import os, subprocess, threading
        for _ in range(2):
            subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", "{marker}"])
        while True:
            pass
    """)
    with Sandbox(places.project) as box:
        box.verify("0")
        template = box.template_pid
        assert template is not None
        finished: list[object] = []
        runner = threading.Thread(target=lambda: finished.append(box.verify(code, timeout=60)))
        runner.start()
        deadline = time.monotonic() + 30
        while len(marked(marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        started = marked(marker)
        assert len(started) == 3, "the check did not start its processes"
        os.kill(template, signal.SIGKILL)
        deadline = time.monotonic() + 2
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        left = marked(marker)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        runner.join(10)
        assert not left and finished, "processes of the check outlived its template"
        assert box.verify("6 * 7").value_repr == "42"


def test_two_gib_allocation_hits_the_memory_limit(sandbox: Sandbox) -> None:
    result = sandbox.verify("block = bytearray(2 << 30)")
    assert result.status == "killed_memory" and not result.ok
    assert result.boundary is not None and result.boundary.hit == ["memory"]
    assert "memory" in result.summary()


def test_sleeping_forever_hits_the_wall_time(sandbox: Sandbox) -> None:
    result = sandbox.verify("import time\ntime.sleep(10**6)", timeout=1)
    assert result.status == "timed_out" and not result.ok
    assert result.boundary is not None and result.boundary.hit == ["wall_time"]


def test_a_busy_loop_hits_the_cpu_limit(places: Places) -> None:
    with Sandbox(places.project, settings=CheckSettings(cpu_seconds=1)) as box:
        result = box.verify("while True:\n    pass", timeout=20)
    assert not result.ok and result.signal in ("SIGXCPU", "SIGKILL")
    assert result.boundary is not None and result.boundary.hit == ["cpu"]
    assert "at its 1 s CPU-time limit" in result.message  # what killed it, by name


def test_the_process_limit_binds_root_too(places: Places) -> None:
    """Forking past the limit fails, for root as for anyone (the check is nobody outside);
    without a user namespace, root is exempt and the record says so."""
    code = "import os\nfor _ in range(50):\n    if os.fork() == 0:\n        os._exit(0)"
    with Sandbox(places.project, settings=CheckSettings(processes=20)) as box:
        result = box.verify(code)
    assert result.boundary is not None and result.boundary.limits["processes"] == 20
    if os.geteuid() == 0 and result.boundary.processes != "pid namespace":
        assert any("does not bind root" in note for note in result.boundary.notes)
    else:
        assert result.exc_type == "BlockingIOError", result.summary()
        assert result.boundary.hit == ["processes"]


def test_closed_std_streams_still_give_a_result(sandbox: Sandbox) -> None:
    result = sandbox.verify("import os, sys\nprint('early', flush=True)\nos.close(1)\nos.close(2)")
    assert result.ok and result.stdout == "early\n"


def test_a_hundred_megabytes_of_output_are_truncated_and_reported(sandbox: Sandbox) -> None:
    code = "import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(100):\n"
    code += "    sys.stdout.buffer.write(chunk)"
    result = sandbox.verify(code, timeout=60)
    assert result.boundary is not None and result.boundary.hit == ["output"]
    assert Path(result.record_path, "stdout.txt").stat().st_size < 2 << 20


def test_without_isolation_the_result_says_so(places: Places) -> None:
    with Sandbox(places.project, settings=CheckSettings(isolation=False)) as box:
        result = box.verify("1")
    assert result.ok and result.boundary is not None
    assert result.boundary.isolation == "none" and result.boundary.reason
    assert "isolation: none" in result.summary()


def test_the_records_folder_ignores_itself_in_git(sandbox: Sandbox, places: Places) -> None:
    sandbox.verify("1")
    runs = places.project / "sandbox_runs"
    assert (runs / ".gitignore").read_text() == "*\n"
    record = next(p for p in runs.iterdir() if p.is_dir())
    assert record.stat().st_mode & 0o077 == 0


def test_a_check_run_by_root_cannot_lift_its_limits(sandbox: Sandbox) -> None:
    """Root keeps its uid but no capabilities: the hard memory limit stays."""
    code = "import resource\ninf = resource.RLIM_INFINITY\n"
    code += "resource.setrlimit(resource.RLIMIT_AS, (inf, inf))"
    result = sandbox.verify(code)
    assert not result.ok and result.exc_type == "ValueError", result.summary()
