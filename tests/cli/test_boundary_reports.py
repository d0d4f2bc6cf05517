"""What `liveforge verify` says about a check's boundary, seen from the command line: no
Landlock on the platform, the network turned on by the project's pyproject, processes a
check left running, and a check whose live run disagrees with the fresh import."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import no_landlock
import pytest
from cli_support import cli_env, run_cli

from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.checks._records import RunResult

HERE = Path(__file__).resolve().parent

WITHOUT_LANDLOCK = (
    f"import sys; sys.path.insert(0, {str(HERE)!r}); import no_landlock; no_landlock.install()\n"
    "from liveforge.__main__ import main; sys.exit(main())\n"
)


def _payload(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.stdout.strip(), done.stderr
    data: dict = json.loads(done.stdout)
    return data


@pytest.mark.skipif(not no_landlock.supported(), reason="seccomp filter for x86-64/AArch64")
def test_where_the_kernel_has_no_landlock_the_check_runs_and_says_isolation_none(
    sample: Path,
) -> None:
    """In a front end whose kernel answers ENOSYS to Landlock (a seccomp filter installed
    before liveforge starts), the check still runs — it writes its temporary file and
    gives its value — and every result says `isolation: none` and why: --json, the text,
    the run record, and the live run."""
    code = textwrap.dedent("""
        import pathlib, tempfile
        pathlib.Path(tempfile.gettempdir(), "made.txt").write_text("x")
        6 * 7
    """)
    command = [sys.executable, "-c", WITHOUT_LANDLOCK]
    done = subprocess.run(
        [*command, "verify", "--json", "-c", code],
        cwd=sample,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    payload = _payload(done)
    assert done.returncode == 0 and payload["ok"], done.stdout + done.stderr
    run = payload["run"]
    assert run["status"] == "passed" and run["value_repr"] == "42"
    reason = "the Linux kernel offers no Landlock"
    for boundary in (run["boundary"], run["live"]["boundary"]):
        assert boundary["isolation"] == "none" and boundary["landlock_abi"] == 0
        assert boundary["reason"].startswith(reason)
        assert boundary["project"] == "writable"
    record = RunResult.model_validate_json(Path(run["record_path"], "result.json").read_text())
    assert record.boundary is not None and record.boundary.isolation == "none"
    text = subprocess.run(
        [*command, "verify", "-c", code],
        cwd=sample,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    assert text.returncode == 0, text.stdout + text.stderr
    assert f"boundary: isolation: none ({reason}" in text.stdout
    assert f"[isolation: none ({reason}" in text.stdout  # the live process: line


@contextmanager
def _listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP listener on 127.0.0.1 that accepts every connection: (port, the accepted)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[object] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(connection)
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        server.close()
        thread.join(5)


@pytest.mark.skipif(probe()[0] < 4, reason="needs Landlock ABI >= 4 (TCP rules)")
def test_network_true_in_the_projects_pyproject_lets_checks_reach_loopback(
    sample: Path,
) -> None:
    """`network = true` under [tool.liveforge.sandbox] turns TCP on for `verify`; without
    it the same connection is denied by the boundary and never reaches the listener."""
    pyproject = sample / "pyproject.toml"
    plain = pyproject.read_text()
    with _listener() as (port, accepted):
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 5).close()\n1"
        denied = _payload(run_cli("verify", "--json", "-c", code, cwd=sample))
        assert not denied["ok"] and not accepted
        run = denied["run"]
        assert run["exc_type"] == "PermissionError" and "network off" in run["message"]
        assert run["boundary"]["network"] is False
        pyproject.write_text(plain + "\n[tool.liveforge.sandbox]\nnetwork = true\n")
        done = run_cli("verify", "--json", "-c", code, cwd=sample)
        allowed = _payload(done)
        assert done.returncode == 0 and allowed["ok"], done.stdout
        assert allowed["run"]["boundary"]["network"] is True
        assert allowed["run"]["live"]["boundary"]["network"] is True
        assert len(accepted) == 2  # the fresh import and the live process both connected


def test_processes_a_check_left_running_are_killed_and_the_result_says_so(
    sample: Path, marked: Callable[[str], set[int]]
) -> None:
    """Three setsid `sleep`s outlive the snippet: none is left afterwards, and --json, the
    text and the run record say that 3 processes still running at the end were killed."""
    marker = f"300.{uuid.uuid4().int % 10**9}"
    code = textwrap.dedent(f"""
        import subprocess
        for _ in range(3):
            subprocess.Popen(["sleep", "{marker}"], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    """)
    note = "3 processes still running at the end were killed"
    try:
        done = run_cli("verify", "--json", "--no-live", "-c", code, cwd=sample)
        payload = _payload(done)
        assert done.returncode == 0 and payload["ok"], done.stdout
        boundary = payload["run"]["boundary"]
        assert boundary["processes_killed"] == 3 and note in boundary["notes"]
        record = Path(payload["run"]["record_path"], "result.json").read_text()
        kept = RunResult.model_validate_json(record).boundary
        assert kept is not None and kept.processes_killed == 3 and note in kept.line()
        text = run_cli("verify", "--no-live", "-c", code, cwd=sample)
        assert text.returncode == 0 and f"; {note}" in text.stdout, text.stdout
        assert not marked(marker)
    finally:
        for pid in marked(marker):
            subprocess.run(["kill", "-9", str(pid)], check=False)


def test_a_divergent_verify_says_so_and_exits_1(sample: Path) -> None:
    """A snippet whose value differs between the fresh import and the live process (the
    program's argv) fails as divergent: `divergent: true`, exit code 1, both values shown."""
    code = "import sys\nsys.argv[0].startswith('<verify')"
    done = run_cli("verify", "--json", "-c", code, cwd=sample)
    payload = _payload(done)
    assert done.returncode == 1 and payload["ok"] is False, done.stdout
    run = payload["run"]
    assert run["divergent"] is True and run["ok"] is False
    assert (run["value_repr"], run["live"]["value_repr"]) == ("True", "False")
    assert payload["error"]["exit_code"] == 1
    assert "the live process and a fresh import disagree" in payload["error"]["message"]
    text = run_cli("verify", "-c", code, cwd=sample)
    assert text.returncode == 1
    assert "live process: passed" in text.stdout and "value False" in text.stdout
    assert "DIVERGENT" in text.stdout
