"""Every sandbox run leaves a record in sandbox_runs/<run-id>/; only the newest are kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from liveforge.kernel.boundary._isolation import WRITES_LISTED, Boundary
from liveforge.kernel.checks._sandbox import OverlayModule, Sandbox
from liveforge.kernel.errors import SandboxError


def test_record_holds_code_overlay_outputs_and_result(tmp_path: Path) -> None:
    overlay = [OverlayModule.new_virtual("virt_recorded", "X = 1\n")]
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        result = box.verify(
            "import sys, virt_recorded\nprint('out')\n"
            "print('err', file=sys.stderr)\nvirt_recorded.X",
            overlay,
            change_ids=["c1", "c2"],
        )
    record = Path(result.record_path)
    assert record.parent == tmp_path / "runs" and record.name == result.run_id
    assert (record / "code.py").read_text().startswith("import sys, virt_recorded")
    assert (record / "overlay" / "virt_recorded.py").read_text() == "X = 1\n"
    manifest = json.loads((record / "overlay.json").read_text())
    assert manifest[0]["name"] == "virt_recorded" and manifest[0]["virtual"] is True
    assert (record / "stdout.txt").read_text() == "out\n"
    assert (record / "stderr.txt").read_text() == "err\n"
    stored = json.loads((record / "result.json").read_text())
    assert stored["change_ids"] == ["c1", "c2"] and stored["value_repr"] == "1"


def test_run_loads_the_stored_result(tmp_path: Path) -> None:
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        result = box.verify("'stored'", change_ids=["c9"])
        assert box.run(result.run_id) == result


def test_runs_lists_newest_first(tmp_path: Path) -> None:
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        first = box.verify("1")
        second = box.verify("raise ValueError('no')")
        rows = box.runs()
    assert [row.run_id for row in rows] == [second.run_id, first.run_id]
    assert (rows[0].status, rows[0].ok) == ("error", False)
    assert "ValueError: no" in rows[0].headline


def test_retention_keeps_only_the_newest_runs(tmp_path: Path) -> None:
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs", keep_runs=3) as box:
        results = [box.verify(str(n)) for n in range(5)]
        kept = sorted(p.name for p in (tmp_path / "runs").iterdir() if p.name[0] != ".")
        assert kept == [r.run_id for r in results[2:]]
        assert [row.run_id for row in box.runs()] == [r.run_id for r in reversed(results[2:])]
        with pytest.raises(SandboxError, match="retention"):
            box.run(results[0].run_id)


def test_retention_leaves_other_files_alone(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "README.md").write_text("kept")
    with Sandbox(tmp_path, runs_dir=runs, keep_runs=1) as box:
        box.verify("1")
        box.verify("2")
    assert (runs / "README.md").read_text() == "kept"
    assert len([p for p in runs.iterdir() if p.is_dir() and p.name[0] != "."]) == 1


def test_unknown_run_id_is_refused_with_a_hint(tmp_path: Path) -> None:
    with (
        Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box,
        pytest.raises(SandboxError, match=r"runs\(\)"),
    ):
        box.run("../../etc")


def test_summary_is_compact_and_names_status_value_and_changes(tmp_path: Path) -> None:
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        text = box.verify("print('hello')\n21 * 2", change_ids=["c4"]).summary()
    assert "snippet passed" in text and "value: 42" in text
    assert "changes: c4" in text and "hello" in text and "record:" in text


def test_default_runs_dir_is_sandbox_runs_under_the_project_root(tmp_path: Path) -> None:
    with Sandbox(tmp_path) as box:
        result = box.verify("0")
    assert Path(result.record_path).parent == tmp_path.resolve() / "sandbox_runs"


def test_records_removed_by_retention_are_deleted_from_disk(tmp_path: Path) -> None:
    import time

    runs = tmp_path / "runs"
    with Sandbox(tmp_path, runs_dir=runs, keep_runs=1) as box:
        for n in range(4):
            box.verify(str(n))
    deadline = time.monotonic() + 10
    while len(list(runs.glob("2*"))) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list(runs.glob("2*"))) == 1 and len(list(runs.iterdir())) == 2  # + .gitignore


def test_retention_spares_a_run_still_in_progress_elsewhere(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    running = runs / "20000101-000000-000000-abcdef"
    running.mkdir(parents=True)
    abandoned = runs / "20000101-000000-000001-abcdef"
    abandoned.mkdir()
    os.utime(abandoned, (1, 1))
    with Sandbox(tmp_path, runs_dir=runs, keep_runs=1) as box:
        box.verify("1")
    assert running.exists() and not abandoned.exists()


def test_the_project_paths_a_check_changed_are_listed_up_to_a_cap() -> None:
    """A check that wrote thousands of files into its view leaves a bounded record."""
    written = [f"gen/{i}.txt" for i in range(WRITES_LISTED + 50)]
    boundary = Boundary(project="copy-on-write").with_changes(written, ["old.txt"])
    assert boundary.project_writes == written[:WRITES_LISTED]
    assert boundary.project_deletes == [] and boundary.project_changes_left_out == 51
    assert f"{WRITES_LISTED + 51} project paths changed in its view" in boundary.line()


def test_a_result_left_to_the_caller_is_written_when_it_saves_it(tmp_path: Path) -> None:
    """`save=False`: the record is there, its result is the caller's to write (once, with
    what the caller adds, as a verify adds its live check)."""
    with Sandbox(tmp_path, runs_dir=tmp_path / "runs") as box:
        result = box.verify("6 * 7", save=False)
        assert result.ok and result.value_repr == "42"
        assert (Path(result.record_path) / "code.py").exists()
        assert not (Path(result.record_path) / "result.json").exists()
        box.store.save(result.model_copy(update={"message": "checked twice"}))
        assert box.run(result.run_id).message == "checked twice"
