"""`liveforge memory ...`: the agent's memories as plain data a person lists, reads, edits and
deletes; unknown ids fail with exit 3 and say how to see the ids."""

from __future__ import annotations

import json
from pathlib import Path

from liveforge.__main__ import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_add_list_search_show_edit_rm(tmp_path: Path, capsys):
    """The whole life of two memories through the command line, in --project."""
    project = ["--project", str(tmp_path)]
    assert run(capsys, "list", *project)[1] == "no memories\n"
    code, out, _ = run(capsys, "add", "CI runs pytest -n 2", "--tag", "ci", *project)
    assert (code, out) == (0, "remembered #1 [ci] CI runs pytest -n 2\n")
    run(capsys, "add", "Prices are integer cents", *project)
    assert run(capsys, "list", *project)[1] == (
        "#2 Prices are integer cents\n#1 [ci] CI runs pytest -n 2\n"
    )
    assert run(capsys, "search", "how", "does", "ci", "run", *project)[1].startswith("#1 [ci]")
    shown = run(capsys, "show", "1", *project)[1]
    assert shown.startswith("#1\ntags: ci\ncreated: ") and shown.endswith("\nCI runs pytest -n 2\n")
    run(capsys, "edit", "2", "Prices are integer cents, never floats", *project)
    data = json.loads(run(capsys, "list", "--json", *project)[1])
    assert data["memories"][0]["text"] == "Prices are integer cents, never floats"
    assert data["ok"] is True and data["action"] == "list"
    assert run(capsys, "rm", "1", "2", *project)[1].count("deleted #") == 2
    assert run(capsys, "list", *project)[1] == "no memories\n"
    assert (tmp_path / ".liveforge" / "memory.sqlite").is_file()


def test_an_unknown_id_fails_with_exit_3_and_deletes_nothing(tmp_path: Path, capsys):
    """`rm 1 9` with no #9 refuses before deleting #1."""
    project = ["--project", str(tmp_path)]
    run(capsys, "add", "keep me", *project)
    code, _, err = run(capsys, "rm", "1", "9", *project)
    assert code == 3 and "no memory #9; `liveforge memory list` shows them." in err
    assert run(capsys, "list", *project)[1] == "#1 keep me\n"
    code, out, _ = run(capsys, "show", "9", "--json", *project)
    assert code == 3 and json.loads(out)["error"]["exit_code"] == 3
