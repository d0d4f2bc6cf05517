"""liveforge's own state folder in a project, `.liveforge/`, which git ignores by itself.

    folder = state_folder(root)          # <root>/.liveforge, made with its .gitignore
    make_parent(root / ".liveforge" / "sessions" / "x.jsonl")  # any file under it

The folder holds what liveforge keeps between calls (the persist lock and journal, sessions,
memory, the gateway's database, chat history). Like `sandbox_runs/`, it is created with its
own `.gitignore`, so `git status` of the project stays clean; the skills and plugins a user
writes there (`skills/`, `plugins/`) are not ignored, so they can be committed.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["GITIGNORE", "STATE_FOLDER", "make_parent", "state_folder"]

STATE_FOLDER = ".liveforge"

GITIGNORE = (
    "# liveforge's own state (written by liveforge); skills/ and plugins/ are yours\n"
    "*\n"
    "!skills/\n"
    "!skills/**\n"
    "!plugins/\n"
    "!plugins/**\n"
)
"""What `.liveforge/.gitignore` holds (the file ignores itself, as `sandbox_runs/`'s does)."""


def state_folder(project_root: str | Path) -> Path:
    """`<project_root>/.liveforge`, created (with its `.gitignore`) when missing."""
    folder = Path(project_root) / STATE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text(GITIGNORE, encoding="utf-8")
        except OSError:
            pass  # a read-only state folder still works; git shows it, nothing else breaks
    return folder


def make_parent(path: str | Path) -> None:
    """Create the folder of `path`; when it lies in a `.liveforge/` folder, that folder
    gets its `.gitignore` first."""
    path = Path(path)
    for folder in path.parents:
        if folder.name == STATE_FOLDER:
            state_folder(folder.parent)
            break
    path.parent.mkdir(parents=True, exist_ok=True)
