"""Copy-on-write views: real overlay mounts in real child processes; the real folder never
changes, and what the view wrote is listed as plain data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from liveforge.kernel.boundary import _overlay
from liveforge.kernel.boundary._overlay import View

needs_views = pytest.mark.skipif(
    _overlay.probe() is not None, reason=f"no copy-on-write views here: {_overlay.probe()}"
)


def make_project(root: Path) -> Path:
    for relative, text in {
        "pkg/__init__.py": "",
        "pkg/mod.py": "def f(x):\n    return x + 1\n",
        "pkg/data/a.txt": "a\n",
        "pkg/data/b.txt": "b\n",
        "gone/old.txt": "old\n",
        "notes.txt": "keep me\n",
        "run.sh": "echo hi\n",
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def snapshot(root: Path) -> dict[str, object]:
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else "dir", p.stat().st_mode)
        for p in sorted(root.rglob("*"))
    }


def run_in_view(view: View, script: str) -> subprocess.CompletedProcess[str]:
    """`script` in a shell that sees `view` over its root (the way a shell tool would)."""
    return subprocess.run(
        ["sh", "-ec", script],
        cwd=view.root,
        preexec_fn=lambda: _overlay.enter(view),
        capture_output=True,
        text=True,
        timeout=30,
    )


@needs_views
def test_every_kind_of_write_lands_in_the_view_and_is_listed(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    before = snapshot(project)
    view = View.beside(project, tmp_path / "view")
    done = run_in_view(
        view,
        """
        printf 'import os\\n' >> pkg/mod.py
        echo new > planted.py
        mkdir -p made/deep && echo x > made/deep/file
        rm notes.txt
        rm -r gone
        rm -r pkg/data && mkdir pkg/data && echo c > pkg/data/c.txt
        chmod +x run.sh
        ln -s pkg/mod.py link.py
        cat pkg/mod.py planted.py
        ls pkg/data
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "def f(x):\n    return x + 1\nimport os\nnew\nc.txt\n"
    assert snapshot(project) == before
    found = _overlay.changes(view.upper)
    assert found.written == [
        "link.py",
        "made/deep/file",
        "pkg/data/c.txt",
        "pkg/mod.py",
        "planted.py",
        "run.sh",
    ]
    assert found.deleted == ["gone", "notes.txt"]
    assert found.opaque == ["pkg/data"]
    assert found.folders == ["made", "made/deep", "pkg", "pkg/data"]
    assert found and found.to_dict()["deleted"] == ["gone", "notes.txt"]
    assert (Path(view.upper) / "pkg" / "mod.py").read_text().endswith("import os\n")


@needs_views
def test_a_root_whose_name_holds_option_separators_is_viewed_too(tmp_path: Path) -> None:
    project = make_project(tmp_path / "a,b:c d\\e")
    view = View.beside(project, tmp_path / "view, too:")
    done = run_in_view(view, "echo more >> notes.txt && cat notes.txt")
    assert (done.returncode, done.stdout) == (0, "keep me\nmore\n"), done.stderr
    assert (project / "notes.txt").read_text() == "keep me\n"
    assert _overlay.changes(view.upper).written == ["notes.txt"]


@needs_views
def test_discard_removes_what_the_view_and_overlayfs_left(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    view = View.beside(project, tmp_path / "view")
    assert run_in_view(view, "rm -r pkg && echo x > y").returncode == 0
    assert any(Path(view.work).iterdir())  # overlayfs's own folder, mode 000
    _overlay.discard(view)
    assert not Path(view.upper).exists() and not Path(view.work).exists()
    assert (project / "pkg" / "mod.py").exists()


def test_an_empty_or_missing_upper_folder_has_no_changes(tmp_path: Path) -> None:
    assert not _overlay.changes(tmp_path)
    assert _overlay.changes(tmp_path / "missing") == _overlay.Changes()


def test_the_probe_says_why_when_views_cannot_be_made(tmp_path: Path) -> None:
    reason = _overlay.probe(tmp_path / "missing")
    assert reason is not None and "could not" in reason
    assert _overlay.probe(tmp_path / "missing") is reason  # tried once per folder


def test_a_probe_started_ahead_answers_the_later_probe(tmp_path: Path) -> None:
    """`probe_ahead` starts the probe's child at once; `probe` of that folder then takes
    its answer (the same as a probe made on the spot) and leaves no probe folder behind."""
    ahead, on_the_spot = tmp_path / "ahead", tmp_path / "spot"
    ahead.mkdir()
    on_the_spot.mkdir()
    _overlay.probe_ahead(ahead)
    child, scratch = _overlay._pending[str(ahead)]  # running while this test goes on
    assert Path(scratch).parent == ahead
    assert _overlay.probe(ahead) == _overlay.probe(on_the_spot)
    assert child.returncode is not None and str(ahead) not in _overlay._pending
    assert list(ahead.iterdir()) == [] and list(on_the_spot.iterdir()) == []


def test_a_probe_ahead_that_cannot_start_says_why(tmp_path: Path) -> None:
    _overlay.probe_ahead(tmp_path / "missing")
    reason = _overlay.probe(tmp_path / "missing")
    assert reason is not None and "could not make a folder" in reason


def test_two_checks_starting_side_by_side_probe_once(tmp_path: Path) -> None:
    """Two threads asking at once (a verify's two checks) share one probe: one probe
    folder is ever made, and both get its answer."""
    import threading
    import time

    seen: set[str] = set()
    answers: list[str | None] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(p.name for p in tmp_path.iterdir() if p.name.startswith("liveforge-probe"))
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    _overlay.probe_ahead(tmp_path)
    askers = [
        threading.Thread(target=lambda: answers.append(_overlay.probe(tmp_path))) for _ in "ab"
    ]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    done.set()
    watcher.join()
    assert len(answers) == 2 and answers[0] == answers[1] == _overlay.probe(tmp_path)
    assert len(seen) == 1, seen


def test_a_probe_started_ahead_and_never_asked_for_leaves_nothing(tmp_path: Path) -> None:
    """A process that started a probe ahead and ends without asking for its answer (a
    command that failed first) leaves no probe folder behind."""
    code = (
        "import sys; from liveforge.kernel.boundary import _overlay; "
        "_overlay.probe_ahead(sys.argv[1])"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    assert list(tmp_path.iterdir()) == []
