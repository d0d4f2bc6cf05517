"""Sessions sharing one live program: turn locks per session within a process, the live lock
per tool call, and changes attributed to the session that made them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from agent_support import make_agent

import liveforge.impls  # noqa: F401  (registers the Session bodies)
from liveforge.declarations.session import Session, SessionBusy
from liveforge.impls.live_program import holding, lane_of, owner_of, released
from liveforge.kernel import Runtime

LOOK = textwrap.dedent("""
    import json, sys
    from liveforge.impls.session_lock import running
    print(json.dumps(running(sys.argv[1])))
    """)


def _seen_from_another_process(root: Path) -> list[object]:
    out = subprocess.run(
        [sys.executable, "-c", LOOK, str(root)], capture_output=True, text=True, timeout=60
    )
    return list(json.loads(out.stdout))


def test_sessions_of_one_process_run_turns_at_once_each_only_once(tmp_path):
    """Two sessions hold turn locks together; the same session twice is refused, as is
    opening a running one; another process sees both; the lock is free after the last."""
    one, two = Session.create(tmp_path), Session.create(tmp_path)
    with one.turn_lock(), two.turn_lock():
        with pytest.raises(SessionBusy) as again:
            with one.turn_lock():
                pass
        assert again.value.holder_session == one.id
        with pytest.raises(SessionBusy):
            Session.open(tmp_path, two.id)
        assert _seen_from_another_process(tmp_path) == [os.getpid(), [one.id, two.id]]
    assert _seen_from_another_process(tmp_path) == [None, []]
    assert Session.open(tmp_path, one.id).id == one.id


def test_a_second_sessions_tool_call_waits_and_each_change_is_its_owners(tmp_path):
    """While one lane holds the live program another waits (or gives up when cancelled);
    changes are attributed to the lane that held it, and tracked only by that lane."""
    rt = Runtime(project_root=tmp_path)
    alpha, beta = Session.create(tmp_path), Session.create(tmp_path)
    inside, go_on = threading.Event(), threading.Event()

    def alpha_call() -> None:
        with holding(rt, lane_of(alpha)):
            rt.patch_module("lp_mod_alpha", "X = 1\n")
            inside.set()
            go_on.wait(30)

    worker = threading.Thread(target=alpha_call)
    worker.start()
    assert inside.wait(30)
    with holding(rt, lane_of(beta), cancelled=lambda: True) as held:
        assert held is False  # beta's turn was cancelled while it waited
    entered = threading.Event()

    def beta_call() -> None:
        with holding(rt, lane_of(beta)):
            entered.set()
            rt.patch_module("lp_mod_beta", "Y = 2\n")

    waiting = threading.Thread(target=beta_call)
    waiting.start()
    assert not entered.wait(0.3)  # alpha still holds the live program
    go_on.set()
    worker.join(30)
    waiting.join(30)
    assert entered.is_set()
    rt.patch_module("lp_mod_outside", "Z = 3\n")  # made outside any session
    by_target = {c.target: owner_of(rt, c.id) for c in rt.history()}
    assert by_target == {
        "lp_mod_alpha": alpha.id,
        "lp_mod_beta": beta.id,
        "lp_mod_outside": None,
    }
    assert sorted(c.target for c in alpha.track(rt)) == ["lp_mod_alpha", "lp_mod_outside"]
    assert sorted(c.target for c in beta.track(rt)) == ["lp_mod_beta", "lp_mod_outside"]


def test_a_holder_that_waits_lets_others_in_and_gets_the_lock_back(tmp_path):
    """`released` (a tool waiting for a sub-agent) lets another thread patch meanwhile;
    afterwards the holder holds the lock again and its own later change is still its own."""
    rt = Runtime(project_root=tmp_path)
    done = threading.Event()

    def other() -> None:
        with holding(rt, "other"):
            rt.patch_module("lp_mod_child", "C = 1\n")
        done.set()

    with holding(rt, "parent"):
        with released():
            thread = threading.Thread(target=other)
            thread.start()
            assert done.wait(30)
        rt.patch_module("lp_mod_parent", "P = 1\n")
        entered, stop = threading.Event(), threading.Event()

        def probe() -> None:
            with holding(rt, "probe", cancelled=stop.is_set) as held:
                if held:
                    entered.set()

        thread = threading.Thread(target=probe)
        thread.start()
        assert not entered.wait(0.3)  # the parent holds it again
        stop.set()
    thread.join(30)
    owners = {c.target: owner_of(rt, c.id) for c in rt.history()}
    assert owners == {"lp_mod_child": "other", "lp_mod_parent": "parent"}


def test_rollback_without_an_id_undoes_the_sessions_own_newest_change(project, fake):
    """Two sessions on one runtime: the model's `rollback()` undoes its own newest change,
    never the other session's newer one; with none of its own it says so."""
    root, _pkg = project
    alpha = make_agent(root, fake)
    beta = make_agent(root, fake, runtime=alpha.runtime)
    for agent, name in ((alpha, "lp_tool_alpha"), (beta, "lp_tool_beta")):
        with holding(agent.runtime, lane_of(agent.session)):
            patch = {"path": name, "source": "X = 1\n", "module": True}
            assert not agent.toolbox.call("patch", patch).is_error
    with holding(alpha.runtime, lane_of(alpha.session)):
        undone = alpha.toolbox.call("rollback", {})
        assert "lp_tool_alpha" in undone.text and "lp_tool_beta" not in undone.text
        again = alpha.toolbox.call("rollback", {})
        assert "no change of yours is in effect" in again.text
    live = {c.target for c in alpha.runtime.history() if c.status.value == "applied"}
    assert live == {"lp_tool_beta"}
