"""Scripted sessions where shell commands change the project: the change is one step of the
session's history — shown by /diff with its command, undone by /undo — a managed module
changed by a command is live at once, and a background process's changes arrive at poll."""

from __future__ import annotations

import importlib
import json
import sys

import pytest
from agent_support import make_agent, of_type, run_turn
from test_agent_hands import _slash

from liveforge.kernel.boundary._overlay import probe
from liveforge.testing import reply

pytestmark = pytest.mark.skipif(probe() is not None, reason=f"no copy-on-write views: {probe()}")


@pytest.fixture(params=["anthropic", "openai"])
def agent(request, project, fake):
    root, _ = project
    made = make_agent(root, fake, protocol=request.param)
    yield made
    made.runtime.close()


def test_a_shell_edit_shows_in_diff_and_undo_restores_every_file(agent, fake, project):
    """sed, a new file and a deletion by one command: one step, named by the command in
    /diff; one /undo puts all three back."""
    root, _ = project
    (root / "notes.md").write_text("speed: slow\n")
    (root / "old.txt").write_text("keep me\n")
    command = "sed -i s/slow/fast/ notes.md && echo made > made.txt && rm old.txt"
    fake.add(reply.tool_call("exec", {"command": command}), reply.text("Done."))
    events = run_turn(agent, "speed it up")
    (finished,) = of_type(events, "tool_finished")
    assert not finished.is_error
    sent = json.dumps(fake.requests[-1].body)
    assert "/diff shows them, /undo puts them back" in sent
    assert (root / "notes.md").read_text() == "speed: fast\n" and not (root / "old.txt").exists()
    shown = _slash(agent, "/diff")
    assert f"# $ {command}" in shown and "+speed: fast" in shown and "-keep me" in shown
    _slash(agent, "/undo")
    assert (root / "notes.md").read_text() == "speed: slow\n"
    assert (root / "old.txt").read_text() == "keep me\n" and not (root / "made.txt").exists()


def test_a_command_that_edits_a_loaded_module_is_live_and_undone_in_two_steps(agent, fake, project):
    """The module's file goes through the patch engine: area() changes at once; /undo puts
    the file back (the change stays in memory, as after a persist), /undo again restores
    the running module."""
    root, pkg = project
    geometry = importlib.import_module(f"{pkg}.geometry")
    command = f"sed -i 's/return 3 \\* radius/return 3.14159 * radius/' {pkg}/geometry.py"
    fake.add(reply.tool_call("exec", {"command": command}), reply.text("Closer to pi."))
    run_turn(agent, "fix area with sed")
    assert geometry.area(1.0) == 3.14159
    assert "3.14159" in (root / pkg / "geometry.py").read_text()
    _slash(agent, "/undo")
    assert "return 3 * radius" in (root / pkg / "geometry.py").read_text()
    assert geometry.area(1.0) == 3.14159
    _slash(agent, "/undo")
    assert geometry.area(1.0) == 3


def _read_until(box, word: str) -> str:
    """process read calls until the process has printed `word` (on a line of its own);
    every result they gave."""
    seen, results = "", ""
    while f"\n{word}\n" not in seen:
        text = box.call("process", {"action": "read", "process_id": "p1"}).text
        seen += "\n" + text.split("\n", 1)[1] + "\n"  # the output, after the status line
        results += text + "\n"
    return results


def test_a_background_process_changes_arrive_as_it_runs_and_undo_stays(agent, fake, project):
    """What the process wrote by the time someone looks is applied then, as a step of its
    own; a later look applies only what is new; after /undo a look does not bring the
    undone files back."""
    root, _ = project
    code = (
        "import pathlib, time; pathlib.Path('first.txt').write_text('1'); print('one', "
        "flush=True); time.sleep(1); pathlib.Path('second.txt').write_text('2'); "
        "print('two', flush=True); time.sleep(60)"
    )
    fake.add(
        reply.tool_call("process", {"action": "start", "command": f'{sys.executable} -c "{code}"'}),
        reply.text("Started."),
    )
    events = run_turn(agent, "start it")
    assert not [f for f in of_type(events, "tool_finished") if f.is_error]
    box = agent.toolbox
    looked = _read_until(box, "one")
    assert "files: changed first.txt" in looked, looked
    assert (root / "first.txt").read_text() == "1"
    looked = _read_until(box, "two")
    assert (root / "second.txt").read_text() == "2", looked
    assert "+2" in _slash(agent, "/diff")
    while agent.runtime.files_are_newest():
        _slash(agent, "/undo")
    assert not (root / "first.txt").exists() and not (root / "second.txt").exists()
    polled = box.call("process", {"action": "poll", "process_id": "p1"}).text
    assert "files:" not in polled and not (root / "first.txt").exists(), polled
    killed = box.call("process", {"action": "kill", "process_id": "p1"}).text
    assert "exited -15" in killed and not (root / "second.txt").exists(), killed
