"""Saving a file the way editors do, for tests that watch files."""

from __future__ import annotations

import os
from pathlib import Path


def save_like_an_editor(path: Path, text: str) -> None:
    """Write like an editor: a new file renamed over the old one."""
    tmp = path.with_suffix(".tmp~")
    tmp.write_text(text)
    os.replace(tmp, path)
