"""The definition index kept under `.liveforge/index/`: reused by the next process, and
refreshed file by file when files change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from liveforge.kernel.source._roots import discover
from liveforge.tools._find import render, search
from liveforge.tools._index import STORE, stored_index

FILES = {
    "shapes/__init__.py": "from .square import Square as Box\n",
    "shapes/square.py": (
        "class Square:\n    def area(self, scale: int = 1) -> int:\n        return 4\n"
    ),
    "shapes/circle.py": "def radius(r: float) -> float:\n    return r\n",
}


def _project(root: Path) -> Path:
    for relative, text in FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def _find(root: Path, query: str) -> tuple[str, int]:
    index = stored_index(discover(root), root)
    return render(search(index, query, None), query, None, index.problems()), index.parsed_last


def test_a_second_process_reuses_the_stored_index(tmp_path: Path):
    """The first index outlines every file and stores them; a fresh index over the same
    files outlines none, and answers the same, signatures and re-exports included."""
    root = _project(tmp_path)
    first, parsed = _find(root, "area")
    assert parsed == 3 and (root / STORE).is_file()
    again, parsed = _find(root, "area")
    assert parsed == 0
    assert again == first == "def shapes.square.Square.area(scale: int=1) -> int :2\n"
    assert _find(root, "Square")[0] == "class shapes.square.Square :1 (exported as shapes.Box)\n"


def test_changed_touched_and_removed_files_refresh_the_store(tmp_path: Path):
    """A file touched without a change is not outlined again; a changed file is, alone; a
    removed file's definitions are gone, in this index and in the next one."""
    root = _project(tmp_path)
    _find(root, "area")
    circle = root / "shapes" / "circle.py"
    os.utime(circle, ns=(circle.stat().st_atime_ns, circle.stat().st_mtime_ns + 10**9))
    assert _find(root, "radius")[1] == 0
    circle.write_text(
        "def radius(r: float) -> float:\n    return r\n\n\ndef diameter(r):\n    pass\n"
    )
    text, parsed = _find(root, "diameter")
    assert parsed == 1 and text == "def shapes.circle.diameter(r) :5\n"
    circle.unlink()
    assert _find(root, "radius")[0] == "no definitions named 'radius'"
    assert _find(root, "diameter") == ("no definitions named 'diameter'", 0)


def test_an_unreadable_store_is_rebuilt(tmp_path: Path):
    """A store that is not JSON (or from another format) is ignored and written anew."""
    root = _project(tmp_path)
    (root / STORE).parent.mkdir(parents=True)
    (root / STORE).write_text("{not json")
    assert _find(root, "radius") == ("def shapes.circle.radius(r: float) -> float :1\n", 3)
    assert json.loads((root / STORE).read_text())["files"]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "liveforge", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_liveforge_find_keeps_its_index_between_commands(tmp_path: Path):
    """`liveforge find` run twice as a command stores the index, and sees a file changed
    between the two."""
    root = _project(tmp_path)
    assert run_cli("find", "area", cwd=root).stdout == (
        "def shapes.square.Square.area(scale: int=1) -> int :2\n"
    )
    stored = (root / STORE).stat().st_mtime_ns
    (root / "shapes" / "square.py").write_text(
        "class Square:\n    def perimeter(self):\n        pass\n"
    )
    result = run_cli("find", "perimeter", "--json", cwd=root)
    assert [hit["path"] for hit in json.loads(result.stdout)["hits"]] == [
        "shapes.square.Square.perimeter"
    ]
    assert (root / STORE).stat().st_mtime_ns != stored


def test_the_stored_index_leaves_git_status_of_the_project_clean(tmp_path: Path):
    """`liveforge find` in a git project makes `.liveforge/` with its `.gitignore`, so the
    index it stores there does not show in `git status`."""
    root = _project(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "shapes"]):
        subprocess.run([*git, *command], cwd=root, check=True, capture_output=True)
    assert run_cli("find", "area", cwd=root).returncode == 0
    assert (root / STORE).is_file()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True)
    assert status.stdout.decode() == ""


def test_what_is_wrong_with_a_file_is_stored_with_its_definitions(tmp_path: Path):
    """A file that is not UTF-8 text, and one that does not parse: the next process, which
    reads neither again, marks and notes them as the first did."""
    root = _project(tmp_path)
    (root / "shapes" / "legacy.py").write_bytes(b"def old():\n    return 'caf\xe9'\n")
    (root / "shapes" / "broken.py").write_text("def half(:\n")
    first, parsed = _find(root, "old")
    assert parsed == 5
    assert "(its file is not utf-8 text: byte 0xe9 on line 2, at byte" in first
    assert "broken.py: does not parse: " in first
    again, parsed = _find(root, "old")
    assert parsed == 0 and again == first
