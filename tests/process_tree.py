"""The process tree as /proc shows it, for tests that check what a run left behind."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["alive", "children", "descendants", "parent"]


def parent(pid: int) -> int:
    """The parent pid of `pid`, or -1 when it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def children(pid: int) -> list[int]:
    """The direct children of `pid` (of its main thread), as the kernel lists them."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(child) for child in text.split()]


def descendants(root: int) -> set[int]:
    """Every process below `root`."""
    parents = {int(name): parent(int(name)) for name in os.listdir("/proc") if name.isdigit()}
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, up in parents.items() if up in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, reaped or not, has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
