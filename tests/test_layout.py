"""The repository layout is part of the product's contract (DESIGN §2)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import liveforge

ROOT = Path(__file__).resolve().parent.parent
MAPPED = {
    "kernel": "liveforge.kernel",
    "declarations": "liveforge.declarations",
    "impls": "liveforge.impls",
    "tools": "liveforge.tools",
    "liveforge": "liveforge",
}


def _declared_packages() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(data["tool"]["setuptools"]["packages"])


def test_every_package_folder_is_declared_in_pyproject():
    """Each folder with an __init__.py under a mapped root is listed, so wheels contain it."""
    found = set()
    for folder, dotted in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if any(p.is_symlink() for p in init.relative_to(ROOT).parents if p != Path(".")):
                continue
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([dotted, *rel.parts]) if rel.parts else dotted)
    assert found == _declared_packages()


def test_mapped_folders_import_as_liveforge_subpackages():
    """kernel/ is liveforge.kernel (through liveforge/kernel) and never a top-level `kernel`."""
    import liveforge.kernel

    assert (ROOT / "liveforge" / "kernel").is_symlink()
    assert Path(liveforge.kernel.__file__).resolve().parent == ROOT / "kernel"
    code = "import importlib.util,sys; sys.exit(importlib.util.find_spec('kernel') is not None)"
    assert subprocess.run([sys.executable, "-c", code], cwd="/").returncode == 0


def test_version_from_console_entry_point():
    """`python -m liveforge --version` prints the package version."""
    out = subprocess.run(
        [sys.executable, "-m", "liveforge", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"liveforge {liveforge.__version__}"
