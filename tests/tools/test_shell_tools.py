"""exec / process through a real Toolbox with real child processes: exit codes, output
limits, timeouts that kill the whole process group, the check boundary's environment, the
allow/deny lists, and background processes started, polled, read and killed."""

from __future__ import annotations

import os
import sys
import time

import pytest
from process_tree import alive
from shell_support import make_box, project_runtime

import liveforge.impls  # noqa: F401  (the @impl bodies)
from liveforge.declarations.permissions import Decision, Policy, effect_of
from liveforge.declarations.toolbox import Toolbox
from liveforge.impls.shell import command_names
from liveforge.tools import shell


@pytest.fixture
def rt(project):
    yield from project_runtime(project)


def test_exec_reports_exit_code_and_both_streams(rt):
    """stdout and stderr reach the model in order, with the exit code."""
    result = make_box(rt).call("exec", {"command": "echo out; echo err >&2; exit 3"})
    assert not result.is_error
    lines = result.text.splitlines()
    assert lines[0] == "$ echo out; echo err >&2; exit 3"
    assert lines[1].startswith("exit 3 in ")
    assert lines[2:] == ["out", "err"]


def test_exec_runs_in_a_project_folder_and_refuses_one_outside(rt, project):
    """cwd is a folder of the project; '..' is refused before anything runs."""
    (project.root / "sub").mkdir()
    assert (
        make_box(rt).call("exec", {"command": "pwd", "cwd": "sub"}).text.rstrip().endswith("/sub")
    )
    refused = make_box(rt).call("exec", {"command": "pwd", "cwd": ".."})
    assert refused.is_error and "cwd refused" in refused.text
    for bad, why in (
        ({"command": "echo a\0b"}, "NUL byte"),
        ({"command": "   "}, "empty"),
        ({"command": "echo 'unclosed"}, "cannot be parsed"),
        ({"command": "true", "timeout": -1}, "positive number"),
        ({"command": "true", "cwd": "missing"}, "not a folder"),
    ):
        result = make_box(rt).call("exec", bad)
        assert result.is_error and why in result.text, (bad, result.text)


def test_the_boundary_keeps_secrets_out_and_outside_it_they_are_there(rt, monkeypatch):
    """Inside the boundary a *_API_KEY variable is absent; boundary=false passes it."""
    monkeypatch.setenv("SHELLTEST_API_KEY", "sk-very-secret")
    command = 'echo "key=${SHELLTEST_API_KEY:-none}"; ulimit -d'
    inside = make_box(rt, memory_mb=512).call("exec", {"command": command}).text
    assert "key=none" in inside and str(512 * 1024) in inside
    assert "[check boundary (landlock)" in inside or "without isolation" in inside
    outside = make_box(rt).call("exec", {"command": command, "boundary": False}).text
    # the variable reaches the command outside the boundary; its value is still scrubbed
    # from what the model sees
    assert "key=[redacted]" in outside and "outside the check boundary" in outside


def test_a_timeout_kills_the_command_and_what_it_started(rt, project):
    """The whole process group dies at the timeout; the model is told it timed out."""
    pidfile = project.root / "child.pid"
    command = f"sleep 60 & echo $! > {pidfile}; echo started; wait"
    result = make_box(rt).call("exec", {"command": command, "timeout": 1})
    assert "timed out after" in result.text and "started" in result.text
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_long_output_keeps_head_and_tail_within_the_limit(rt):
    """100,000 lines come back as their first and last lines with a marker between."""
    text = make_box(rt, output_limit=2000).call("exec", {"command": "seq 1 100000"}).text
    assert len(text) < 2600
    assert "\n1\n2\n" in text and text.rstrip().endswith("100000") and "omitted" in text


def test_allow_and_deny_lists_check_every_command_of_a_line(rt, project):
    """A denied command anywhere in a pipeline refuses the whole line, and it does not run."""
    marker = project.root / "ran.txt"
    denied = make_box(rt, deny=["rm"]).call("exec", {"command": f"touch {marker} && rm -rf x"})
    assert denied.is_error and "rm is denied" in denied.text and not marker.exists()
    allowed = make_box(rt, allow=["echo", "grep"])
    assert not allowed.call("exec", {"command": "echo hi | grep hi"}).is_error
    outside = allowed.call("exec", {"command": "echo hi; curl example.org"})
    assert outside.is_error and "curl is not in the shell allow list" in outside.text
    hidden = allowed.call("exec", {"command": "echo $(curl example.org)"})
    assert hidden.is_error and "cannot be checked" in hidden.text


def test_command_names_see_through_assignments_paths_and_operators():
    """The names the lists are checked against."""
    line = "FOO=1 /usr/bin/env python -c 'a|b' | (cd x && ls) ; sudo rm -f y & true"
    assert command_names(line) == ["env", "cd", "ls", "sudo", "true"]


def test_a_background_process_is_started_polled_read_and_killed(rt):
    """The output written so far is read once; kill stops it and poll says how it ended."""
    box = make_box(rt)
    code = "import time; print('ready', flush=True); time.sleep(60)"
    started = box.call("process", {"action": "start", "command": f'{sys.executable} -c "{code}"'})
    assert not started.is_error and started.text.startswith("p1 pid ")
    deadline = time.monotonic() + 20
    read = ""
    while "ready" not in read and time.monotonic() < deadline:
        read += box.call("process", {"action": "read", "process_id": "p1"}).text
    assert "running" in read and "ready" in read
    assert "(no new output)" in box.call("process", {"action": "read", "process_id": "p1"}).text
    killed = box.call("process", {"action": "kill", "process_id": "p1"}).text
    assert "exited -15" in killed
    assert "p1 pid" in box.call("process", {"action": "list"}).text
    unknown = box.call("process", {"action": "poll", "process_id": "p9"})
    assert unknown.is_error and "known: p1" in unknown.text


def test_shell_tools_are_asked_about_in_ask_mode_and_refused_in_read_only():
    """Both tools have the shell effect, so the one policy asks or refuses them."""
    for tool in (shell.exec, shell.process):
        assert effect_of(tool) == "shell"
        assert Policy(mode="ask").decide(tool.__name__, effect_of(tool)) is Decision.ASK
        assert Policy(mode="read-only").decide(tool.__name__, effect_of(tool)) is Decision.DENY
    assert os.name == "posix"


def test_the_gate_asks_with_the_exact_command_and_read_only_refuses(rt, project):
    """ask mode: the approver sees the exact command (declined: it does not run);
    read-only: refused without asking."""
    marker = project.root / "ran.txt"
    command = f"touch {marker} && echo 'quoted; $HOME'"
    asked = []

    def decline(request):
        asked.append(request)
        return False

    box = Toolbox(runtime=rt, packages=["liveforge.tools"], limit=8000)
    box.policy, box.approver = Policy(mode="ask"), decline
    result = box.call("exec", {"command": command})
    assert result.is_error and "declined exec" in result.text and not marker.exists()
    (request,) = asked
    assert (request.tool, request.effect, request.arguments["command"]) == (
        "exec",
        "shell",
        command,
    )
    assert command in request.preview
    box.policy = Policy(mode="read-only")
    refused = box.call("exec", {"command": command})
    assert refused.is_error and "read-only" in refused.text and len(asked) == 1
    assert not marker.exists()
