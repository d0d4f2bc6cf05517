"""Faults inside a sandbox run become recorded statuses and leave the parent healthy."""

from __future__ import annotations

import json
import resource
import signal
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import WHO, temp_package, who_gone

from liveforge.kernel.boundary._policy import CheckSettings
from liveforge.kernel.checks._sandbox import OverlayModule, Sandbox


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    root = tmp_path_factory.mktemp("faults")
    # the tests' own folders are writable, so snippets can leave pid files there
    settings = CheckSettings(writable=(str(tmp_path_factory.getbasetemp()),))
    with Sandbox(root, runs_dir=root / "runs", output_cap=256 << 10, settings=settings) as box:
        yield box


@pytest.fixture(autouse=True)
def parent_stays_healthy(sandbox: Sandbox) -> Iterator[None]:
    """After every fault the same sandbox still answers a plain check from its template."""
    yield
    pid = sandbox.template_pid
    after = sandbox.verify("6 * 7")
    assert (after.status, after.value_repr) == ("passed", "42")
    assert sandbox.template_pid == pid


def test_infinite_loop_is_killed_at_timeout_with_its_grandchildren(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = textwrap.dedent(f"""
        import subprocess, pathlib
        p = subprocess.Popen(["sleep", "300"])
        pathlib.Path({str(pid_file)!r}).write_text({WHO.format(pid="p.pid")})
        while True:
            pass
    """)
    result = sandbox.verify(code, timeout=1.5)
    assert result.status == "timed_out" and not result.ok
    assert "timeout" in result.message
    assert who_gone(pid_file.read_text())


def test_os_exit_is_a_crash_with_its_exit_code(sandbox: Sandbox) -> None:
    result = sandbox.verify("import os\nprint('bye', flush=True)\nos._exit(3)")
    assert (result.status, result.exit_code) == ("crashed", 3)
    assert "code 3" in result.message and result.stdout == "bye\n"


def test_segfault_is_a_crash_naming_the_signal(sandbox: Sandbox) -> None:
    result = sandbox.verify("import ctypes\nctypes.string_at(0)")
    assert (result.status, result.signal) == ("crashed", "SIGSEGV")


def test_system_exit_in_the_snippet_is_an_error_not_an_exit(sandbox: Sandbox) -> None:
    result = sandbox.verify("import sys\nsys.exit(4)")
    assert (result.status, result.exc_type, result.exc_message) == ("error", "SystemExit", "4")
    assert result.exit_code == 0


def test_keyboard_interrupt_in_the_snippet_is_an_error(sandbox: Sandbox) -> None:
    result = sandbox.verify("raise KeyboardInterrupt")
    assert (result.status, result.exc_type) == ("error", "KeyboardInterrupt")


def test_memory_bomb_is_stopped_by_memory_limit(sandbox: Sandbox) -> None:
    code = "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 1024 * 1024))"
    result = sandbox.verify(code, memory_mb=200)
    assert result.status == "killed_memory" and result.exc_type == "MemoryError"


def test_closing_stdout_keeps_the_output_so_far_and_the_result(sandbox: Sandbox) -> None:
    result = sandbox.verify("import sys\nprint('before')\nsys.stdout.close()\n'done'")
    assert (result.status, result.value_repr, result.stdout) == ("passed", "'done'", "before\n")


def test_replacing_stdout_does_not_break_the_result(sandbox: Sandbox) -> None:
    result = sandbox.verify("import io, sys\nsys.stdout = io.StringIO()\nprint('hidden')\n1")
    assert (result.status, result.value_repr, result.stdout) == ("passed", "1", "")


def test_huge_output_is_truncated_with_marker_and_not_held_by_parent(sandbox: Sandbox) -> None:
    code = (
        "import sys\nline = 'x' * 999 + '\\n'\n"
        "for _ in range(100_000):\n    sys.stdout.write(line)\nprint('END')"
    )
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = sandbox.verify(code, timeout=60)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert result.status == "passed"
    assert "truncated" in result.stdout and result.stdout.endswith("END\n")
    stored = Path(result.record_path, "stdout.txt")
    assert stored.stat().st_size < 1 << 20
    assert "liveforge truncated" in stored.read_text()
    assert grown_kib < 50 * 1024


def test_snippet_patching_and_deleting_modules_leaves_parent_untouched(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    with temp_package(tmp_path, {"mod.py": "def f(x):\n    return x + 1\n"}) as name:
        module = __import__(f"{name}.mod", fromlist=["f"])
        overlay = [OverlayModule(f"{name}.mod", "def f(x):\n    return -x\n", module.__file__)]
        code = (
            f"import json, sys\nimport {name}.mod as m\nm.f = None\njson.dumps = None\n"
            f"del sys.modules['json']\ndel sys.modules[{name + '.mod'!r}]"
        )
        result = sandbox.verify(code, overlay)
        assert result.status == "passed"
        assert module.f(1) == 2 and sys.modules[f"{name}.mod"] is module
        assert json.dumps([1]) == "[1]" and sys.modules["json"] is json


def test_interrupting_the_parent_while_it_waits_kills_the_run(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    who = WHO.format(pid="os.getpid()")
    code = f"import os, pathlib\npathlib.Path({str(pid_file)!r}).write_text({who})\n"
    code += "while True:\n    pass"

    def interrupt(signum: int, frame: object) -> None:
        # the child is not running yet, or has not written its pid: look again shortly
        if not pid_file.exists() or not pid_file.read_text():
            signal.setitimer(signal.ITIMER_REAL, 0.1)
            return
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.1)
    try:
        with pytest.raises(KeyboardInterrupt):
            sandbox.verify(code, timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert who_gone(pid_file.read_text())
    sandbox.verify("0")  # a fresh template replaces the interrupted one


@pytest.mark.parametrize(
    "kill",
    ["os.killpg(0, signal.SIGKILL)", "os.kill(os.getpid(), signal.SIGKILL)"],
)
def test_a_check_that_kills_its_own_process_group_says_so(sandbox: Sandbox, kill: str) -> None:
    """A snippet that SIGKILLs itself (with a memory and a CPU limit set) is reported as
    killed by its own signal, not as a memory or CPU limit."""
    result = sandbox.verify(f"import os, signal\n{kill}", memory_mb=512, cpu_seconds=30)
    assert result.status == "crashed" and result.signal == "SIGKILL", result.summary()
    assert "killed by its own SIGKILL" in result.message
    assert result.boundary is not None and result.boundary.hit == []
