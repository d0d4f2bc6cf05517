"""The check boundary seen from the front end: secrets never come out, and a killed front
end takes its check's processes with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_support import cli_env, run_cli
from process_tree import alive, descendants
from secret_leaks import KEY, LEAKS, leaked

from liveforge.agent_setup import open_toolbox
from liveforge.kernel import Runtime
from liveforge.kernel.boundary import _overlay
from liveforge.kernel.boundary._boundary import probe


def test_secrets_printed_by_a_check_reach_no_output_and_no_file(sample: Path) -> None:
    (sample / ".env").write_text(f"FAKE_API_KEY={KEY}\n")
    done = run_cli("verify", "--json", "-c", LEAKS, cwd=sample, FAKE_API_KEY=KEY)
    payload = json.loads(done.stdout)
    assert payload["ok"], done.stdout
    assert "[redacted]" in payload["run"]["stdout"]
    assert not leaked(done.stdout + done.stderr)
    for path in (sample / "sandbox_runs").rglob("*"):
        if path.is_file():
            assert not leaked(path.read_text(errors="replace")), path
    done = run_cli("verify", "-c", LEAKS, cwd=sample, FAKE_API_KEY=KEY)
    assert done.returncode == 0 and not leaked(done.stdout + done.stderr)


def test_tool_results_carry_no_secret(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the model (and an MCP client) gets from a check is scrubbed too."""
    (sample / ".env").write_text(f"FAKE_API_KEY={KEY}\n")
    monkeypatch.setenv("FAKE_API_KEY", KEY)
    monkeypatch.chdir(sample)
    rt = Runtime(project_root=sample)
    try:
        result = open_toolbox(rt).call("verify", {"code": LEAKS})
    finally:
        rt.close()
    assert "[redacted]" in result.text and not leaked(result.text)


def _proc_visible() -> bool:
    try:
        Path("/proc/1/stat").read_text()
    except OSError:  # e.g. this suite runs inside a check's boundary
        return False
    return True


@pytest.mark.skipif(probe()[0] < 1, reason="needs Linux with Landlock")
@pytest.mark.skipif(not _proc_visible(), reason="needs to see other processes in /proc")
@pytest.mark.parametrize("check", ["fresh", "live"])
def test_killing_the_front_end_during_a_check_leaves_no_process_of_it(
    sample: Path, check: str, marked: Callable[[str], set[int]]
) -> None:
    """The fresh-import check, or the live one (a fork of the front end, which runs once
    the fresh one passed), hangs with setsid children when the front end is SIGKILLed."""
    if check == "live" and _overlay.probe() is not None:
        pytest.skip("a live check's setsid children are contained by its own pid namespace")
    marker = f"300.{uuid.uuid4().int % 10**9}"
    fresh = "sys.argv[0].startswith('<verify')"  # a live fork has the front end's argv
    code = textwrap.dedent(f"""
        import subprocess, sys
        if {fresh if check == "fresh" else "not " + fresh}:
            subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
            subprocess.Popen(["sleep", "{marker}"])
            while True:
                pass
    """)
    front = subprocess.Popen(
        [sys.executable, "-m", "liveforge", "verify", "--timeout", "120", "-c", code],
        cwd=sample,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while len(marked(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(marked(marker)) == 2, "the check did not start"
        tree = descendants(front.pid) | marked(marker)
        front.send_signal(signal.SIGKILL)
        front.wait()
        deadline = time.monotonic() + 2
        while any(alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in tree if alive(pid)]
    finally:
        front.kill()
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)


START_UNTIL_REFUSED = {
    "fork": "if os.fork() == 0: time.sleep(3); os._exit(0)",
    "subprocess": "subprocess.Popen(['sleep', '3'])",
}


@pytest.mark.skipif(probe()[0] < 1, reason="needs Linux with Landlock")
@pytest.mark.parametrize("how", sorted(START_UNTIL_REFUSED))
def test_a_refused_process_start_is_reported_even_when_caught(tmp_path: Path, how: str) -> None:
    """A check that starts processes until the limit refuses one, and catches the error,
    passes, and its boundary names the limit it hit: `hit: processes`."""
    (tmp_path / "pyproject.toml").write_text("[tool.liveforge.sandbox]\nprocesses = 20\n")
    code = textwrap.dedent(f"""
        import os, subprocess, time
        started = 0
        try:
            while started < 100:
                {START_UNTIL_REFUSED[how]}
                started += 1
        except OSError:
            pass
        started
    """)
    done = run_cli("--json", "verify", "--no-live", "-c", code, cwd=tmp_path)
    run = json.loads(done.stdout)["run"]
    if run["boundary"]["processes"] != "pid namespace" and os.geteuid() == 0:
        pytest.skip("without a user namespace the process limit does not bind root")
    assert done.returncode == 0 and int(run["value_repr"]) <= 20, done.stdout
    assert run["boundary"]["hit"] == ["processes"]
    text = run_cli("verify", "--no-live", "-c", code, cwd=tmp_path)
    assert "hit: processes" in text.stdout


def test_checks_have_a_process_limit_by_default(tmp_path: Path) -> None:
    """Without configuration a check may have 512 processes: a fork bomb stops there."""
    done = run_cli("--json", "verify", "--no-live", "-c", "1", cwd=tmp_path)
    assert json.loads(done.stdout)["run"]["boundary"]["limits"]["processes"] == 512
