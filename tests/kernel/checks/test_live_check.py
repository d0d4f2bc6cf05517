"""Checks that see the live program: `verify` runs a snippet in a fork of the running process
besides the fresh-import sandbox; when they disagree, the change is divergent and persist
refuses it unless forced."""

from __future__ import annotations

import atexit
import os
import time
from pathlib import Path

import pytest
from kernel_support import Project

from liveforge import Runtime
from liveforge.kernel.checks import _livefork
from liveforge.kernel.errors import UnverifiedChange

pytestmark = pytest.mark.skipif(not _livefork.available(), reason="needs os.fork")


def test_verify_reports_a_live_process_that_differs_from_a_fresh_import(
    project: Project, rt: Runtime
) -> None:
    """A patch verified while the running program holds something else (here, code put in
    place behind liveforge's back) is divergent: not ok, said plainly, persist refuses it
    until forced."""
    mod = project.module("def limit():\n    return 1\n")
    change = rt.patch(f"{mod.__name__}.limit", "def limit():\n    return 2\n")
    mod.limit = lambda: 3  # the live program no longer runs what the source says
    result = rt.verify(f"from {mod.__name__} import limit\nlimit()")
    assert result.value_repr == "2" and result.live is not None
    assert result.live.value_repr == "3" and result.divergent and not result.ok
    assert result.message == (
        "the live process and a fresh import disagree: both passed, with different values: "
        "fresh import 2, live process 3."
    )
    assert "DIVERGENT" in result.summary()
    assert change.divergent and "divergent" in change.summary()
    with pytest.raises(UnverifiedChange, match="live process and a fresh import disagreed"):
        rt.persist()
    rt.persist(force=True)
    assert (project.root / f"{mod.__name__}.py").read_text().endswith("return 2\n")


def test_agreeing_checks_verify_the_change(project: Project, rt: Runtime) -> None:
    """When both runs agree, the result is ok and shows the live run; a divergence seen
    before is cleared."""
    mod = project.module("def limit():\n    return 1\n")
    change = rt.patch(f"{mod.__name__}.limit", "def limit():\n    return 2\n")
    change.divergent_in = "earlier-run"
    result = rt.verify(f"from {mod.__name__} import limit\nassert limit() == 2")
    assert result.ok and result.live is not None and result.live.ok
    assert not change.divergent and change.verified
    assert rt.verify("1", live=False).live is None


def test_the_live_run_works_in_the_project_root_like_the_fresh_one(
    project: Project,
    rt: Runtime,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A front end started in another folder (an MCP client's, a `--project` elsewhere):
    the live run reads the project's files by relative path as the fresh one does, and the
    two agree."""
    (project.root / "settings.txt").write_text("from the project\n")
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    result = rt.verify("import os\nos.getcwd(), open('settings.txt').read()")
    assert result.live is not None and result.live.value_repr == result.value_repr
    assert result.ok and not result.divergent, result.summary()
    assert result.value_repr == repr((str(project.root.resolve()), "from the project\n"))


def test_the_fork_never_runs_the_parents_exit_handlers_or_flushes_its_buffers(
    tmp_path: Path,
) -> None:
    """The forked check leaves through os._exit: an atexit handler of this process does not
    run, and text buffered in an open file of this process is not written twice."""
    marker, buffered = tmp_path / "atexit-ran", tmp_path / "buffered.txt"

    def handler() -> None:
        marker.write_text("ran")

    atexit.register(handler)
    handle = buffered.open("w")
    handle.write("parent text\n")
    try:
        check = _livefork.run_live("print('child out')\n6 * 7", timeout=30)
    finally:
        atexit.unregister(handler)
        handle.close()
    assert check.ok and check.value_repr == "42" and check.stdout == "child out\n"
    assert not marker.exists() and buffered.read_text() == "parent text\n"


def test_the_fork_gets_no_secret_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secret environment variables of this process are not in the live check's, and the
    result says no filesystem or network boundary applied."""
    monkeypatch.setenv("LFTEST_API_KEY", "sk-secret")
    monkeypatch.setenv("LFTEST_PLAIN", "visible")
    check = _livefork.run_live(
        "import os\n(os.environ.get('LFTEST_API_KEY'), os.environ.get('LFTEST_PLAIN'))",
        timeout=30,
    )
    assert check.value_repr == "(None, 'visible')" and "isolation: none" in check.headline()


def test_a_hanging_live_check_is_killed_at_its_timeout() -> None:
    """A snippet that never ends is killed, with what it started, at the timeout."""
    started = time.monotonic()
    check = _livefork.run_live(
        "import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)", timeout=1
    )
    assert check.status == "timed_out" and not check.ok
    assert time.monotonic() - started < 20


def test_a_crashing_live_check_is_a_result(project: Project) -> None:
    """A child killed by a signal is reported as crashed, naming the signal."""
    check = _livefork.run_live(
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", timeout=30
    )
    assert check.status == "crashed" and "SIGKILL" in (check.exc_message or "")
    assert os.getpid() > 0  # this process is untouched
