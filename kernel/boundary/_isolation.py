"""The boundary a check had, as it is recorded with its result (fresh-import and live).

`Boundary` is the child's report (`_boundary.apply_boundary`) plus what the parent saw: the
limits the run hit and what the check wrote into its copy-on-write view of the project
(listed, then discarded).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["WRITES_LISTED", "Boundary", "killed_note"]

WRITES_LISTED = 200
"""How many written or deleted project paths a record lists (the rest are counted)."""


class Boundary(BaseModel):
    """The boundary a run had: isolation level, what it could write, the project, network,
    processes, limits."""

    isolation: Literal["landlock", "none"] = "none"
    reason: str | None = Field(None, description="why there was no isolation")
    landlock_abi: int = 0
    writable: list[str] = Field(default_factory=list)
    network: bool = True
    signals_scoped: bool = False
    project: Literal["copy-on-write", "read-only", "writable"] = Field(
        "read-only",
        description="how the check saw the project: copy-on-write (its writes were "
        "discarded), read-only, or writable (no file-system isolation)",
    )
    project_reason: str | None = Field(None, description="why the project was not copy-on-write")
    project_writes: list[str] = Field(
        default_factory=list,
        description="project files the check wrote or created in its view (discarded)",
    )
    project_deletes: list[str] = Field(
        default_factory=list, description="project files the check deleted in its view"
    )
    project_changes_left_out: int = Field(0, description="changed paths not listed")
    processes: Literal["pid namespace", "subreaper"] = Field(
        "subreaper",
        description="how the check's processes were kept: a pid namespace of its own (all die "
        "with it), or the sandbox's subreaper killing what a run left",
    )
    processes_killed: int = Field(
        0, description="processes the check left running when it ended (all were killed)"
    )
    limits: dict[str, float | None] = Field(default_factory=dict)
    hit: list[str] = Field(
        default_factory=list,
        description="limits the run ran into: memory, cpu, processes, output, wall_time",
    )
    notes: list[str] = Field(default_factory=list)

    def line(self) -> str:
        """One line for people and models."""
        if self.isolation == "none":
            head = f"isolation: none ({self.reason})"
        else:
            folders = [w for w in self.writable if not w.startswith(("/dev/", "device "))]
            head = f"isolation: landlock ABI {self.landlock_abi}; writes only " + ", ".join(
                folders + ["devices"] * (len(folders) < len(self.writable))
            )
        parts = [head, f"project {self.project}", "network on" if self.network else "network off"]
        parts.append(f"processes: {self.processes}")
        limits = [f"{k} {v:g}" for k, v in self.limits.items() if v is not None]
        if limits:
            parts.append("limits: " + ", ".join(limits))
        if self.hit:
            parts.append("hit: " + ", ".join(self.hit))
        changed = len(self.project_writes) + len(self.project_deletes)
        changed += self.project_changes_left_out
        if changed:
            parts.append(f"{changed} project paths changed in its view (discarded)")
        if self.processes_killed:
            parts.append(killed_note(self.processes_killed))
        return "; ".join(parts)

    def with_killed(self, count: int) -> Boundary:
        """This boundary with `count` processes the check left running, killed after it."""
        notes = [*self.notes, killed_note(count)]
        return self.model_copy(update={"processes_killed": count, "notes": notes})

    def with_changes(self, written: list[str], deleted: list[str]) -> Boundary:
        """This boundary with the project paths a check changed in its view (capped)."""
        room = WRITES_LISTED
        writes, deletes = written[:room], deleted[: max(0, room - len(written))]
        left = len(written) + len(deleted) - len(writes) - len(deletes)
        update = {"project_writes": writes, "project_deletes": deletes}
        return self.model_copy(update={**update, "project_changes_left_out": left})


def killed_note(count: int) -> str:
    """`3 processes still running at the end were killed` (the boundary's note)."""
    if count == 1:
        return "1 process still running at the end was killed"
    return f"{count} processes still running at the end were killed"
