"""Scripted sessions through the fake providers (Anthropic and OpenAI protocols) using the
agent's hands: file tools whose edits show in /diff and are undone by /undo, an edit to a
loaded module that is live at once, shell commands whose output, exit code and timeout reach
the model, a background process, and memory carried into a new session."""

from __future__ import annotations

import asyncio
import importlib
import json
from io import StringIO

import pytest
from agent_support import make_agent, of_type, run_turn
from rich.console import Console

from liveforge.cli.chat._slash import ChatState, dispatch
from liveforge.cli.turns._render import Renderer
from liveforge.declarations.permissions import Decision, Policy, effect_of
from liveforge.testing import reply

NOTES = "# Notes\nspeed: slow\nsize: small\n"
PATCH = """\
--- a/notes.md
+++ b/notes.md
@@ -1,3 +1,3 @@
 # Notes
 speed: fast
-size: small
+size: large
"""


@pytest.fixture(params=["anthropic", "openai"])
def protocol(request):
    return request.param


@pytest.fixture
def agent_on(project, fake, protocol):
    root, _ = project
    agents = []

    def make(**kwargs):
        agent = make_agent(root, fake, protocol=protocol, **kwargs)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.runtime.close()


def _slash(agent, line: str) -> str:
    """Run a chat slash command on the agent; what it printed."""
    out = StringIO()
    console = Console(file=out, width=200, color_system=None)

    async def yes(question: str) -> bool:
        return True

    state = ChatState(
        agent=agent,
        console=console,
        renderer=Renderer(console),
        project=agent.runtime.project_root,
        model="m",
        confirm=yes,
        switch_model=lambda name: name,
    )
    asyncio.run(dispatch(state, line))
    return out.getvalue()


def test_read_edit_patch_show_in_diff_and_undo_restores(project, fake, agent_on):
    """read_file, edit_file, apply_patch and an edit of a loaded module in one turn; /diff
    shows them all; three /undo put everything back, the running module included."""
    root, pkg = project
    (root / "notes.md").write_text(NOTES)
    agent = agent_on()  # its runtime puts the project on sys.path
    geometry = importlib.import_module(f"{pkg}.geometry")
    fake.add(
        reply.tool_call("read_file", {"path": "notes.md"}),
        reply.tool_call(
            "edit_file",
            {"path": "notes.md", "old_string": "speed: slow", "new_string": "speed: fast"},
        ),
        reply.tool_call("apply_patch", {"patch": PATCH}),
        reply.tool_call(
            "edit_file",
            {
                "path": f"{pkg}/geometry.py",
                "old_string": "return 3 * radius * radius",
                "new_string": "return 3.14159 * radius * radius",
            },
        ),
        reply.text("Notes updated and area() is closer to pi."),
    )
    events = run_turn(agent, "update the notes and fix area")
    finished = of_type(events, "tool_finished")
    assert [(f.name, f.is_error) for f in finished] == [
        ("read_file", False),
        ("edit_file", False),
        ("apply_patch", False),
        ("edit_file", False),
    ]
    assert "2 speed: slow" in json.dumps(fake.requests[1].body)  # the numbered read
    assert geometry.area(1.0) == 3.14159  # live at once
    assert [p.kind for p in of_type(events, "patch_applied")] == ["file", "file", "file"]
    shown = _slash(agent, "/diff")
    assert "+speed: fast" in shown and "+size: large" in shown
    assert "+    return 3.14159 * radius * radius" in shown
    for _ in range(3):
        assert "rolled back" in _slash(agent, "/undo")
    assert (root / "notes.md").read_text() == NOTES
    assert geometry.area(1.0) == 3
    assert "return 3 * radius" in (root / pkg / "geometry.py").read_text()
    assert "no unpersisted changes" in _slash(agent, "/diff")


def test_a_folder_outside_the_project_is_refused_until_allow_paths_names_it(
    project, fake, agent_on, tmp_path
):
    """By default read_file and edit_file refuse a file outside the project, and the model
    reads how the user can allow it; once `allow_paths` under [tool.liveforge.tools.files]
    in pyproject.toml names its folder, a new session reads and edits it."""
    root, _ = project
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "notes.md").write_text(NOTES)
    target = str(outside / "notes.md")
    edit = {"path": target, "old_string": "speed: slow", "new_string": "speed: fast"}
    fake.add(
        reply.tool_call("read_file", {"path": target}),
        reply.tool_call("edit_file", edit),
        reply.text("That file is outside the project."),
    )
    events = run_turn(agent_on(), "read and edit the notes elsewhere")
    assert [f.is_error for f in of_type(events, "tool_finished")] == [True, True]
    sent = json.dumps(fake.requests[-1].body)
    assert f"'{target}' is outside the project root" in sent
    assert "adding it to `allow_paths` under [tool.liveforge.tools.files] in pyproject.toml" in sent
    assert (outside / "notes.md").read_text() == NOTES
    (root / "pyproject.toml").write_text(
        f"[tool.liveforge.tools.files]\nallow_paths = [{json.dumps(str(outside))}]\n"
    )
    fake.add(
        reply.tool_call("read_file", {"path": target}),
        reply.tool_call("edit_file", edit),
        reply.text("Edited."),
    )
    events = run_turn(agent_on(), "read and edit the notes elsewhere")
    assert [f.is_error for f in of_type(events, "tool_finished")] == [False, False]
    assert "2 speed: slow" in json.dumps(fake.requests[-2].body)
    assert (outside / "notes.md").read_text() == NOTES.replace("slow", "fast")


def test_shell_output_exit_code_timeout_and_a_background_process(project, fake, agent_on):
    """What the commands printed, their exit codes and the timeout reach the model; the
    background process is started, polled and killed."""
    server = "python3 -c \"import time; print('serving', flush=True); time.sleep(60)\""
    fake.add(
        reply.tool_call("exec", {"command": "echo built; echo warn >&2; exit 4"}),
        reply.tool_call("exec", {"command": "sleep 30", "timeout": 1}),
        reply.tool_call("process", {"action": "start", "command": server}),
        reply.tool_call("process", {"action": "poll", "process_id": "p1"}),
        reply.tool_call("process", {"action": "kill", "process_id": "p1"}),
        reply.text("The build exits 4; the sleep timed out; the server was stopped."),
    )
    agent = agent_on()
    events = run_turn(agent, "build, wait, then start and stop the server")
    assert not [f for f in of_type(events, "tool_finished") if f.is_error]
    sent = json.dumps(fake.requests[-1].body)
    assert "exit 4 in" in sent and "built\\nwarn" in sent
    assert "timed out after" in sent
    assert "p1 pid" in sent and "running" in sent and "exited -15" in sent
    for name in ("exec", "process"):
        func = {t.name: t.func for t in agent.toolbox.tools()}[name]
        assert Policy(mode="ask").decide(name, effect_of(func)) is Decision.ASK
        assert Policy(mode="read-only").decide(name, effect_of(func)) is Decision.DENY


def test_a_memory_written_in_one_session_is_found_in_the_next(project, fake, agent_on):
    """Session one remembers; session two (a new agent, a new runtime) finds it by search
    and gets it in its system prompt."""
    fake.add(
        reply.tool_call("memory_write", {"text": "The user wants areas rounded to 2 places."}),
        reply.text("Noted."),
    )
    run_turn(agent_on(), "remember: round areas to two places")
    fake.add(reply.tool_call("memory_search", {"query": "rounding areas"}), reply.text("2."))
    events = run_turn(agent_on(), "how should areas be rounded?")
    assert not [f for f in of_type(events, "tool_finished") if f.is_error]
    sent = json.dumps(fake.requests[-1].body)
    assert "#1 The user wants areas rounded to 2 places." in sent
    system = json.dumps(fake.requests[-2].body)
    assert "Memories of this project" in system


def test_a_denied_tool_is_not_offered_and_a_call_anyway_is_refused(project, fake, agent_on):
    """[tool.liveforge.tools] deny = ["group:shell"]: the request's tool list has no exec,
    and a model that calls it anyway gets a refusal it can read; nothing runs."""
    root, _ = project
    (root / "pyproject.toml").write_text('[tool.liveforge.tools]\ndeny = ["group:shell"]\n')
    fake.add(
        reply.tool_call("exec", {"command": f"touch {root / 'ran'}"}),
        reply.text("Shell commands are not available here."),
    )
    events = run_turn(agent_on(), "touch a file")
    offered = json.dumps(fake.requests[0].body["tools"])
    assert '"read_file"' in offered and '"exec"' not in offered and '"process"' not in offered
    (finished,) = of_type(events, "tool_finished")
    assert finished.is_error and "exec is not available in this session" in finished.summary
    assert not (root / "ran").exists()
