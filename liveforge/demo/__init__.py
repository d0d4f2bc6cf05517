"""`liveforge demo`: a sample project with a real bug, and a scripted replay model that fixes it.

`SAMPLE_DIR` is the bundled project (package `pricing`, its tests, a pyproject.toml); the
replay (`liveforge.demo.replay`) is the model's side of one self-iteration episode on it,
played by the FakeProvider over loopback, so the demo needs no key and no network.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["SAMPLE_DIR", "copy_sample"]

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
"""The bundled sample project (shipped as package data)."""


def copy_sample(destination: Path) -> Path:
    """Copy the sample project into `destination` (created; must be empty if it exists)."""
    if destination.exists() and any(destination.iterdir()):
        raise FileExistsError(f"{destination} is not empty; pick a new or empty folder.")
    shutil.copytree(
        SAMPLE_DIR,
        destination,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".liveforge", "sandbox_runs"),
    )
    return destination
