"""`liveforge demo` as a user runs it: a subprocess in a fresh folder, the fix checked on disk."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cli_support import run_cli


def test_demo_fixes_the_sample_on_disk_and_its_tests_pass(tmp_path: Path):
    """The replayed episode persists the fix: the file changes and the sample's tests pass."""
    result = run_cli("demo", "project", cwd=tmp_path, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "REPLAY" in out and str(tmp_path / "project") in out
    for step in ("inspect_module", "run_tests", "view_source", "patch", "verify", "persist"):
        assert f"● {step}(" in out
    assert "+        if self.quantity >= BULK_QUANTITY:" in out
    cart = (tmp_path / "project" / "pricing" / "cart.py").read_text()
    assert "if self.quantity >= BULK_QUANTITY:" in cart and "quantity > BULK" not in cart
    tests = subprocess.run(["python", "-m", "pytest", "-q"], cwd=tmp_path / "project",
                           capture_output=True, text=True, timeout=120)
    assert tests.returncode == 0, tests.stdout
    assert (tmp_path / "project" / ".liveforge" / "sessions").is_dir()


def test_demo_without_dir_says_where_the_project_went(tmp_path: Path):
    """With no DIR the demo uses a new temporary folder and prints its path."""
    result = run_cli("demo", cwd=tmp_path, timeout=180, TMPDIR=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    made = [p for p in tmp_path.iterdir() if p.name.startswith("liveforge-demo-")]
    assert len(made) == 1 and str(made[0]) in result.stdout
    assert ">= BULK_QUANTITY" in (made[0] / "pricing" / "cart.py").read_text()


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path: Path):
    """A non-empty DIR is a usage error (exit 2) and nothing in it is touched."""
    (tmp_path / "keep.txt").write_text("mine")
    result = run_cli("demo", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2 and "not empty" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
