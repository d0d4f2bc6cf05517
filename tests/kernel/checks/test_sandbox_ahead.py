"""What a sandbox prepares for later checks, and what a one-shot check starts early.

With `CheckSettings(ahead=False)` the template pre-imports nothing of this process's
libraries and makes no check ahead, nor do live checks get hosts made ahead; a template
started ahead (`TemplateProcess.start_ahead`) serves such a sandbox's first check. Each
live check runs on a thread that ends with it; a sandbox's after-run work runs in order on
one kept thread, and `finish` waits for it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from process_tree import children

from liveforge.kernel.boundary._policy import CheckSettings
from liveforge.kernel.checks import _livefork
from liveforge.kernel.checks._alongside import LiveAlongside
from liveforge.kernel.checks._runfiles import Afterwards
from liveforge.kernel.checks._sandbox import Sandbox
from liveforge.kernel.checks._template import TemplateProcess

LOADED = "import sys; sorted(name for name in ('pydantic', 'pytest') if name in sys.modules)"


def test_a_sandbox_ahead_preloads_this_process_libraries(tmp_path: Path) -> None:
    """The default: the check starts with pydantic and pytest (loaded here) imported."""
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        result = box.verify(LOADED)
    assert result.ok, result.summary()
    assert result.value_repr == "['pydantic', 'pytest']"


def test_a_sandbox_not_ahead_preloads_nothing_and_makes_no_check_ahead(tmp_path: Path) -> None:
    """`ahead=False`: the check imports what it uses; after the run the template, left
    idle, has no check waiting in namespaces."""
    settings = CheckSettings(ahead=False)
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs", settings=settings) as box:
        result = box.verify(LOADED)
        assert result.ok, result.summary()
        assert result.value_repr == "[]"
        assert box.template_pid is not None
        time.sleep(0.3)  # a template ahead would have made the next check by now
        assert children(box.template_pid) == []


@pytest.mark.skipif(not _livefork.available(), reason="needs os.fork")
def test_a_sandbox_not_ahead_starts_no_host_maker_for_live_checks(tmp_path: Path) -> None:
    settings = CheckSettings(ahead=False)
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs", settings=settings) as box:
        checked = box.run_live("1 + 1")
        assert checked.ok and checked.value_repr == "2"
        assert box._hosts._process is None


def test_the_template_started_ahead_serves_the_first_check(tmp_path: Path) -> None:
    """A bare template started ahead for the project is the one a sandbox without
    `ahead` forks its first check from; a sandbox that preloads starts its own."""
    root = tmp_path.resolve()
    TemplateProcess.start_ahead(root)
    from liveforge.kernel.checks._template import _AHEAD

    early = _AHEAD[root].process.pid
    with Sandbox(root, runs_dir=root / "runs-ahead") as preloading:
        assert preloading.verify("1").ok
        assert preloading.template_pid != early
    assert _AHEAD[root].process.pid == early  # still waiting for a sandbox it fits
    settings = CheckSettings(ahead=False)
    with Sandbox(root, runs_dir=root / "runs", settings=settings) as box:
        result = box.verify("21 * 2")
        assert result.ok and result.value_repr == "42"
        assert box.template_pid == early
        assert box.template_starts == 1
    assert root not in _AHEAD


@pytest.mark.skipif(not _livefork.available(), reason="needs os.fork")
def test_each_live_check_runs_on_a_thread_that_ends_with_it(tmp_path: Path) -> None:
    """Three live checks one after another leave no thread of theirs behind: what a check's
    fork starts with a parent-death signal (the relay and pid 1 of namespaces it makes when
    no host is ready) is tied to the thread that forked it, so that thread must end."""

    def workers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "liveforge-live-check"}

    before = workers()
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        for value in range(3):
            checked = LiveAlongside(box, f"{value} + 1", {"timeout": 30}).result()
            assert checked.ok and checked.value_repr == str(value + 1)
    deadline = time.monotonic() + 10
    while workers() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not workers() - before


def test_after_run_work_runs_in_order_on_one_kept_thread() -> None:
    """Jobs run in the order given, on one thread while they keep coming; a failing job
    does not stop the next; `finish` returns once all are done."""
    afterwards = Afterwards()
    seen: list[tuple[int, int]] = []
    release = threading.Event()
    afterwards.start(lambda: (release.wait(5), seen.append((0, threading.get_ident()))))
    afterwards.start(lambda: 1 / 0)
    for number in (1, 2):
        afterwards.start(lambda n=number: seen.append((n, threading.get_ident())))
    assert seen == []
    release.set()
    afterwards.finish()
    assert [n for n, _ in seen] == [0, 1, 2]
    assert len({ident for _, ident in seen}) == 1
    afterwards.start(lambda: seen.append((3, threading.get_ident())))
    afterwards.finish()
    assert seen[-1] == (3, seen[0][1])  # the same thread, kept while jobs come
