"""`liveforge demo` as a user runs it: a subprocess in a fresh folder, the fix checked on disk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_support import run_cli

from liveforge.demo import copy_sample


def test_demo_fixes_the_sample_on_disk_and_says_where(tmp_path: Path):
    """From a fresh folder, the replayed episode persists the fix in a new temporary folder
    it names; the file changes on disk and the sample's own tests pass there."""
    result = run_cli("demo", cwd=tmp_path, timeout=180, TMPDIR=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    (project,) = [p for p in tmp_path.iterdir() if p.name.startswith("liveforge-demo-")]
    out = result.stdout
    assert "REPLAY" in out and str(project) in out
    for step in ("inspect_module", "run_tests", "view_source", "patch", "verify", "persist"):
        assert f"● {step}(" in out
    assert "+        if self.quantity >= BULK_QUANTITY:" in out
    said = " ".join(out.split())  # the next steps say what a chat needs, not where to read it
    assert "liveforge chat (needs a model: set ANTHROPIC_API_KEY, OPENAI_API_KEY" in said
    cart = (project / "pricing" / "cart.py").read_text()
    assert "if self.quantity >= BULK_QUANTITY:" in cart and "quantity > BULK" not in cart
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tests.returncode == 0, tests.stdout
    assert list((project / ".liveforge" / "sessions").glob("*.jsonl"))


def test_sample_copies_whole_into_a_given_folder(tmp_path: Path):
    """copy_sample puts the package, its tests and pyproject into DIR, without caches."""
    target = copy_sample(tmp_path / "shop")
    names = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert names == [
        "README.md",
        "pricing/__init__.py",
        "pricing/cart.py",
        "pricing/coupons.py",
        "pyproject.toml",
        "tests/test_cart.py",
    ]


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path: Path):
    """A non-empty DIR is a usage error (exit 2) and nothing in it is touched."""
    (tmp_path / "keep.txt").write_text("mine")
    result = run_cli("demo", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2 and "not empty" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
