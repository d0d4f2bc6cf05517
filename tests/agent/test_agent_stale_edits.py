"""Edits refuse stale reads: `edit_file` / `apply_patch` on a file whose text changed since
the agent last read or wrote it are refused, telling the model to read it again."""

from __future__ import annotations

from agent_support import make_agent, of_type, run_turn

from liveforge.testing import reply

PATCH = """\
--- a/notes.md
+++ b/notes.md
@@ -1,2 +1,2 @@
 # Notes
-speed: slow
+speed: fast
"""


def _results(fake) -> list[str]:
    """The tool results of the last request, in order."""
    return [
        block["content"]
        for message in fake.requests[-1].body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_an_edit_after_an_outside_change_is_refused_until_the_file_is_read_again(project, fake):
    """read_file, an outside edit, then edit_file and apply_patch: both refused, the file as
    the outside edit left it; after a new read_file the same edit goes through."""
    root, _ = project
    notes = root / "notes.md"
    notes.write_text("# Notes\nspeed: slow\n")
    agent = make_agent(root, fake)
    edit = {"path": "notes.md", "old_string": "speed: slow", "new_string": "speed: fast"}
    fake.add(reply.tool_call("read_file", {"path": "notes.md"}), reply.text("read it"))
    run_turn(agent, "read the notes")
    notes.write_text("# Notes\nspeed: slow\nowner: someone else\n")
    fake.add(
        reply.tool_call("edit_file", edit).tool_call("apply_patch", {"patch": PATCH}),
        reply.text("refused"),
    )
    events = run_turn(agent, "make it fast")
    refused = _results(fake)[-2:]
    assert all("changed since you last read or wrote it" in text for text in refused)
    assert all("read_file it again" in text for text in refused)
    assert all(f.is_error for f in of_type(events, "tool_finished"))
    assert notes.read_text() == "# Notes\nspeed: slow\nowner: someone else\n"
    fake.add(
        reply.tool_call("read_file", {"path": "notes.md"}),
        reply.tool_call("edit_file", edit),
        reply.tool_call("edit_file", {**edit, "old_string": "owner", "new_string": "by"}),
        reply.text("done"),
    )
    events = run_turn(agent, "read it again and edit")
    assert not any(f.is_error for f in of_type(events, "tool_finished"))
    assert notes.read_text() == "# Notes\nspeed: fast\nby: someone else\n"
