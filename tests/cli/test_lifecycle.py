"""The chat's one-line check reports, and kernel advice turned into chat commands."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from liveforge.cli._words import in_chat_words, in_command_words
from liveforge.cli.turns._lifecycle import check_line, not_ready, reasons
from liveforge.kernel import Runtime
from liveforge.kernel.checks._records import RunResult, TestCounts, TestFailure


def _run(**fields) -> RunResult:
    base = {
        "run_id": "r1",
        "kind": "tests",
        "status": "failed",
        "ok": False,
        "message": "1 failed",
        "started_at": "2026-01-01T00:00:00Z",
        "duration": 1.234,
    }
    return RunResult(**{**base, **fields})


def test_failing_tests_are_named_in_one_line():
    """Counts, then at most three failing test ids and how many more."""
    failures = [TestFailure(nodeid=f"t.py::test_{i}", when="call", message="x") for i in range(5)]
    line = check_line(_run(tests=TestCounts(passed=7, failed=5), failures=failures))
    assert line == (
        "✗ tests failed in 1.23s · 7 passed, 5 failed · failing: t.py::test_0, t.py::test_1, "
        "t.py::test_2 (+2 more) · run r1"
    )


def test_one_error_is_counted_in_the_singular():
    """An error collecting one test file reads "1 error", more read "2 errors"."""
    one = check_line(_run(tests=TestCounts(passed=2, failed=0, errors=1), failures=[]))
    assert "2 passed, 0 failed, 1 error ·" in one
    two = check_line(_run(tests=TestCounts(passed=2, failed=0, errors=2), failures=[]))
    assert "2 passed, 0 failed, 2 errors ·" in two


def test_a_passing_snippet_shows_its_value():
    """A verify that passed shows the final expression's value."""
    line = check_line(_run(kind="snippet", status="passed", ok=True, value_repr="900"))
    assert line.startswith("✓ verify passed in 1.23s · value 900")


def test_kernel_advice_becomes_chat_commands():
    """Python-API advice in an error reads as the command that does the same."""
    text = "Check them first (rt.verify(...) / rt.run_tests(...)), or persist with force=True."
    assert in_chat_words(text) == (
        "Check them first (/verify CODE or /tests), or write anyway with /persist --force."
    )
    assert in_command_words(text).startswith("Check them first (liveforge verify / liveforge test)")


def test_a_rolled_back_persist_reads_as_chat_commands():
    """The note a rollback of a persisted change gives, and the refusal to orphan a file,
    name /undo in the chat, not `unpersist()`."""
    note = "persist writes the rolled-back code to it, or unpersist() puts the file back"
    assert in_chat_words(note).endswith("or /undo puts the file back")
    refusal = "Undo the persist first (unpersist()), or patch the module instead."
    assert "(/undo)" in in_chat_words(refusal) and "unpersist" not in in_chat_words(refusal)


def test_a_patch_that_broke_the_check_reads_as_undo_in_the_chat():
    """The check machinery's refusal of an outside-project patch names /undo in the chat."""
    text = "the check itself (c1 (json.dumps)). Roll it back to check other changes."
    assert in_chat_words(text).endswith("(c1 (json.dumps)). /undo it to check other changes.")


def test_a_verified_change_found_divergent_is_held_back_saying_why(tmp_path: Path):
    """A change verified once, then found divergent (the running module's state moved away
    from its source), is not ready to persist, and the reason names the divergent run."""
    name = f"lf_divergent_{tmp_path.name[-8:].replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("LIMIT = 1\n\n\ndef limit():\n    return LIMIT\n")
    sys.path.insert(0, str(tmp_path))
    rt = Runtime(project_root=tmp_path)
    try:
        module = importlib.import_module(name)
        change = rt.patch(f"{name}.limit", "def limit():\n    return LIMIT + 1\n")
        assert rt.verify(f"import {name}; {name}.limit()").ok
        assert not_ready(rt) == []
        module.LIMIT = 5
        run = rt.verify(f"import {name}; {name}.limit()")
        assert run.divergent
        assert [c.id for c in not_ready(rt)] == [change.id]
        assert reasons(not_ready(rt)) == [
            f"{change.id} {name}.limit: divergent: the live process and a fresh import "
            f"disagreed (run {run.run_id})"
        ]
    finally:
        rt.close()
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
