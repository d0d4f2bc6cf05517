"""Shell commands inside the check boundary, met with hostile commands: writes outside the
project, TCP to a loopback listener with the network off and on, a signal to the front end,
and `setsid` escapees that must not outlive the tool call, the timeout, a kill, or the
front end itself."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from process_tree import alive
from shell_support import make_box, project_runtime

import liveforge.impls  # noqa: F401  (the @impl bodies)
from liveforge.declarations.shell import Shell
from liveforge.declarations.tool_settings import ShellSettings
from liveforge.kernel.boundary._boundary import probe

pytestmark = pytest.mark.skipif(probe()[0] < 6, reason="needs Landlock ABI 6 (Linux 6.12+)")


@pytest.fixture
def rt(project):
    yield from project_runtime(project)


def test_writes_reach_the_project_and_tmpdir_but_nothing_outside(rt, project, tmp_path_factory):
    """The project and $TMPDIR are writable; a folder outside the project is not, also not
    through a symlink in the project; the result says what held the command in."""
    outside = tmp_path_factory.mktemp("outside")
    (project.root / "door").symlink_to(outside)
    command = (
        f"umount {project.root} 2>/dev/null || echo umount-refused; mkfifo pipe; "
        "echo in > made.txt && echo tmp > $TMPDIR/t && cat $TMPDIR/t; "
        f"echo out > {outside}/a.txt; echo out > door/b.txt; "
        f"python3 -c \"open('{outside}/c.txt', 'w')\" 2>&1 | tail -1"
    )
    text = make_box(rt).call("exec", {"command": command}).text
    assert (project.root / "made.txt").read_text() == "in\n" and "\ntmp\n" in text
    assert "umount-refused" in text and not (project.root / "pipe").exists()
    assert "not applied: pipe (pipes, sockets and devices stay in the view)" in text
    assert list(outside.iterdir()) == []
    assert text.count("Permission denied") == 3, text
    assert "check boundary (landlock): writes only in the project and $TMPDIR" in text


@pytest.fixture
def listener():
    """A TCP listener on loopback that answers every connection with 'hello'."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"hello\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_tcp_to_loopback_is_refused_with_network_off_and_works_with_it_on(rt, listener):
    """Python sockets and curl both: refused by default, allowed by the call's network=true
    or by the configuration's network = true."""
    connect = (
        f"python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {listener}), 5);"
        f' print(s.recv(10).decode().strip())" 2>&1 | tail -1; '
        f"curl -sS --max-time 5 telnet://127.0.0.1:{listener} 2>&1 | head -1"
    )
    off = make_box(rt).call("exec", {"command": connect}).text
    assert "hello" not in off and "Permission denied" in off and "network off" in off
    on = make_box(rt).call("exec", {"command": connect, "network": True}).text
    assert on.count("hello") == 2 and "network on" in on
    configured = make_box(rt, network=True).call("exec", {"command": connect}).text
    assert configured.count("hello") == 2


def test_the_command_cannot_signal_the_front_end(rt):
    """kill of the process running liveforge is refused (Landlock signal scoping)."""
    command = f"kill -CONT {os.getpid()}; echo rc=$?; kill -CONT $$ && echo self-ok"
    text = make_box(rt).call("exec", {"command": command}).text
    assert "Operation not permitted" in text and "rc=1" in text and "self-ok" in text


def test_setsid_escapees_die_when_the_call_ends_and_at_the_timeout(rt, project):
    """A command that ends at once, and one killed at its timeout, leave nothing running:
    not a setsid process, not a double fork out of a subshell."""
    ended = project.root / "ended.pid"
    command = f"setsid sleep 300 & echo $! > {ended}; (setsid sleep 301 & echo $! >> {ended})"
    assert "exit 0" in make_box(rt).call("exec", {"command": command}).text
    pids = [int(p) for p in ended.read_text().split()]
    assert len(pids) == 2 and not any(alive(p) for p in pids)
    timed = project.root / "timed.pid"
    command = f"setsid sh -c 'trap \"\" TERM; echo $$ > {timed}; exec sleep 300' & sleep 300"
    text = make_box(rt).call("exec", {"command": command, "timeout": 1}).text
    assert "timed out after" in text
    assert not alive(int(timed.read_text()))


def test_a_background_process_started_from_a_passing_thread_lives_until_killed(
    rt, tmp_path_factory
):
    """The thread that asked for it may end (MCP workers do); the process runs on, and kill
    stops its setsid escapee too. (The pid file goes to a configured writable folder.)"""
    pids = tmp_path_factory.mktemp("pids")
    pidfile = pids / "bg.pid"
    box = make_box(rt, writable=[str(pids)])
    command = f"setsid sleep 300 & echo $! > {pidfile}; echo up; sleep 300"
    worker = threading.Thread(
        target=box.call, args=("process", {"action": "start", "command": command})
    )
    worker.start()
    worker.join()
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    escapee = int(pidfile.read_text())
    polled = box.call("process", {"action": "poll", "process_id": "p1"}).text
    assert "running" in polled and alive(escapee)
    assert "exited -15" in box.call("process", {"action": "kill", "process_id": "p1"}).text
    assert not alive(escapee)


FRONT_END = """
import sys, time
import liveforge.impls
from liveforge.declarations.shell import Shell
from liveforge.declarations.tool_settings import ShellSettings
from liveforge.kernel import Runtime
settings = ShellSettings(writable=[sys.argv[2]])
shell = Shell(runtime=Runtime(project_root=sys.argv[1]), settings=settings)
shell.start(f"setsid sleep 300 & echo $! > {sys.argv[2]}/bg.pid; sleep 300")
print("started", flush=True)
time.sleep(300)
"""


def test_everything_dies_with_the_front_end(project, tmp_path_factory):
    """A front end killed outright (SIGKILL, no cleanup of its own) takes the command and
    its setsid escapee with it."""
    pids = tmp_path_factory.mktemp("pids")
    script = project.root / "front.py"
    script.write_text(textwrap.dedent(FRONT_END))
    front = subprocess.Popen(
        [sys.executable, str(script), str(project.root), str(pids)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert front.stdout is not None and front.stdout.readline().strip() == "started"
        pidfile = pids / "bg.pid"
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        escapee = int(pidfile.read_text())
        assert alive(escapee)
    finally:
        front.send_signal(signal.SIGKILL)
        front.wait()
    deadline = time.monotonic() + 10
    while alive(escapee) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(escapee)


def test_outside_the_boundary_files_are_not_walled_in(rt, project, tmp_path_factory):
    """boundary=false (which the user approves) runs as a terminal would."""
    outside = Path(tmp_path_factory.mktemp("free")) / "x.txt"
    text = make_box(rt).call("exec", {"command": f"echo x > {outside}", "boundary": False}).text
    assert outside.read_text() == "x\n" and "outside the check boundary" in text


CONFINED_FRONT_END = """
import sys, tempfile
from liveforge.kernel.boundary._boundary import BoundaryPolicy, apply_boundary, readable_paths
root, scratch = sys.argv[1], sys.argv[2]
tempfile.tempdir = scratch
import liveforge.impls
from liveforge.declarations.shell import Shell
from liveforge.declarations.tool_settings import ShellSettings
from liveforge.kernel import Runtime
policy = BoundaryPolicy(scratch=scratch, readable=readable_paths(root), writable=(root,))
apply_boundary(policy)  # a process Landlock confines may not mount a view
rt = Runtime(project_root=root)
result = Shell(runtime=rt, settings=ShellSettings()).run("echo new > a.txt")
print(result.exit_code, result.changes)
print(repr(rt.file_writes_diff()))
"""


def test_without_a_view_the_command_writes_the_project_and_says_it_is_not_undoable(
    project, tmp_path_factory
):
    """Where no copy-on-write view can be made (here: liveforge itself runs confined), the
    command still runs in the boundary and writes the project, and its result says the
    change is not undoable, and why."""
    scratch = tmp_path_factory.mktemp("scratch")
    (project.root / "a.txt").write_text("old\n")
    script = scratch / "front.py"
    script.write_text(textwrap.dedent(CONFINED_FRONT_END))
    done = subprocess.run(
        [sys.executable, str(script), str(project.root), str(scratch)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (project.root / "a.txt").read_text() == "new\n"
    first, second = done.stdout.splitlines()
    assert first.startswith("0 any files it changed in the project are not undoable (")
    assert "copy-on-write" in first and second == "''"


def test_changes_made_before_a_kill_arrive_at_the_kill(rt, project):
    """Nobody looked while it ran: killing it applies what it wrote, as one step."""
    box = make_box(rt)
    box.call("process", {"action": "start", "command": "echo x > k.txt; echo done; sleep 60"})
    shell = Shell(runtime=rt, settings=ShellSettings())
    seen = ""
    while "done" not in seen:
        seen += shell.read("p1")  # reading output applies nothing
    assert not (project.root / "k.txt").exists()
    killed = box.call("process", {"action": "kill", "process_id": "p1"}).text
    assert "files: changed k.txt" in killed and (project.root / "k.txt").read_text() == "x\n"
    rt.unpersist()
    assert not (project.root / "k.txt").exists()


def test_a_module_with_changes_in_memory_keeps_its_file_and_the_model_is_told(rt, project):
    """The command edited the file of a module patched in memory: nothing of the command's
    changes is applied, the file and the running module stay, and the result says why."""
    shapes = f"{project.pkg}.shapes"
    rt.patch(f"{shapes}.UNIT", "UNIT = 2.0\n")
    path = project.root / project.pkg / "shapes.py"
    before = path.read_text()
    command = (
        f"sed -i 's/3.14 \\* radius/3.1416 * radius/' {project.pkg}/shapes.py; touch other.txt"
    )
    text = make_box(rt).call("exec", {"command": command}).text
    assert "its file changes in the project were not applied" in text
    assert "has changes in memory that the file lacks" in text
    assert path.read_text() == before and not (project.root / "other.txt").exists()


LEAVING_FRONT_END = """
import sys
import liveforge.impls
from liveforge.declarations.shell import Shell
from liveforge.declarations.tool_settings import ShellSettings
from liveforge.kernel import Runtime
shell = Shell(runtime=Runtime(project_root=sys.argv[1]), settings=ShellSettings())
shell.start("echo bye > left.txt; echo done; sleep 300")
seen = ""
while "done" not in seen:
    seen += shell.read("p1")  # output only: nothing applied yet
"""


def test_what_a_background_process_wrote_reaches_the_project_when_the_program_ends(project):
    """Nobody looked before the program ended: the process is stopped and its changes are
    applied on the way out, not lost with its view."""
    script = project.root / "leaving.py"
    script.write_text(textwrap.dedent(LEAVING_FRONT_END))
    done = subprocess.run(
        [sys.executable, str(script), str(project.root)], capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (project.root / "left.txt").read_text() == "bye\n"


SHIM = """#!/usr/bin/env bash
set -e
export FAKEENV_ROOT="{root}"
exec "{root}/libexec/fakeenv" exec "${{0##*/}}" "$@"
"""
SHIM_TARGET = """#!/usr/bin/env bash
set -e
version="$(cat "$FAKEENV_ROOT/version")"
program="$2"
shift 2
exec "$FAKEENV_ROOT/versions/$version/bin/$program" "$@"
"""


def pyenv_style_home(home: Path) -> Path:
    """A home folder with a pyenv-style version manager (shims that exec its dispatcher,
    which reads the selected version and runs that version's interpreter) and a secret."""
    root = home / ".fakeenv"
    version = root / "versions" / "3.x" / "bin"
    for folder in (root / "shims", root / "libexec", version):
        folder.mkdir(parents=True)
    (root / "version").write_text("3.x\n")
    (version / "python3").symlink_to(Path(sys.executable).resolve())
    for path, text in (
        (root / "shims" / "python3", SHIM),
        (root / "libexec" / "fakeenv", SHIM_TARGET),
    ):
        path.write_text(text.format(root=root))
        path.chmod(0o755)
    (home / "secret.txt").write_text("hidden\n")
    return root


def test_a_pyenv_style_shim_first_on_path_runs_its_python_inside_the_boundary(
    rt, tmp_path_factory, monkeypatch
):
    """`python3` resolving to a version manager's shim in the home folder runs: the shim,
    its dispatcher, the version file and the interpreter are readable and executable; the
    rest of the home folder is not."""
    home = tmp_path_factory.mktemp("home")
    root = pyenv_style_home(home)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{root / 'shims'}{os.pathsep}{os.environ['PATH']}")
    command = (
        "command -v python3; python3 -c 'import sys; print(\"inside\", sys.version_info[0])'; "
        "cat ~/secret.txt; ls ~ >/dev/null"
    )
    text = make_box(rt).call("exec", {"command": command}).text
    assert f"{root}/shims/python3" in text and "inside 3" in text, text
    assert "hidden" not in text and text.count("Permission denied") == 2, text
