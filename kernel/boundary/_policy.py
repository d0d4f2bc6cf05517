"""What a sandbox run is given: the settings, the per-run policy, and what the run hit.

`CheckSettings` holds the configurable defaults of a sandbox (network, limits, extra paths);
`policy_for` turns them, with a call's overrides, into the `BoundaryPolicy` a child applies;
`limits_hit` reads a finished run for the limits it ran into. The boundary as it applied is
recorded in every result (`RunResult.boundary`).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from liveforge.kernel.boundary import _overlay
from liveforge.kernel.boundary._boundary import BoundaryPolicy, probe, readable_paths
from liveforge.kernel.boundary._toolpaths import tool_paths, tools_key
from liveforge.kernel.defaults import CHECK_PROCESSES

__all__ = ["CheckSettings", "Readable", "Scratch", "expected_report", "limits_hit", "policy_for"]


@dataclass(frozen=True)
class CheckSettings:
    """Defaults for every check of a sandbox; `verify`/`run_tests` may override some.

    `memory_mb` is address space a check may add to the pre-imported template's;
    `cpu_seconds` is CPU time of the check's process; `processes` is how many processes
    the check may have at once (default 512; in a user namespace of its own; without one,
    how many more its user may have, which does not bind root);
    `output_bytes` caps each captured stream (the middle is dropped, with a note);
    `readable` / `writable` add paths to what a check may read / write; `isolation=False`
    turns the file-system, network and signal boundary off (the result then says so).
    `ahead=False` prepares nothing for later checks: the template pre-imports no library
    (the check imports what it uses, inside the boundary) and no check's namespaces are
    made while idle (a one-shot check, such as the command line's, has no later check;
    with `ahead` its first check waits for the template's imports).
    """

    network: bool = False
    memory_mb: int | None = 2048
    cpu_seconds: float | None = None
    processes: int | None = CHECK_PROCESSES
    output_bytes: int = 1 << 20
    readable: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    isolation: bool = True
    ahead: bool = True

    def __post_init__(self) -> None:
        for name in ("memory_mb", "cpu_seconds", "processes"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be a positive number or None, not {value!r}")
        if self.output_bytes < 1024:
            raise ValueError(f"output_bytes must be at least 1024, not {self.output_bytes!r}")


class Scratch:
    """The folders checks may write: one private temporary root per sandbox, and in it one
    folder per run, removed after the run (what a check wrote there never reaches the
    project, nor the record unscrubbed)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="liveforge-checks-")).resolve()

    def folder(self, run_id: str) -> Path:
        """A new, empty scratch folder for one run."""
        if not self.root.is_dir():  # removed from outside: make a new root
            self.root = Path(tempfile.mkdtemp(prefix="liveforge-checks-")).resolve()
        path = self.root / run_id
        path.mkdir(mode=0o700)
        return path

    def view(self, run_id: str) -> Path:
        """Where one run's copy-on-write view of the project keeps its writes: beside the
        run's scratch folder, out of the check's reach except through the view."""
        return self.root / f"{run_id}.view"

    def namespaces_reason(self) -> str | None:
        """Why checks get no namespaces of their own here (None: they do); tried once per
        process and temporary folder (a view's upper folder lives beside the scratch)."""
        return _overlay.probe(self.root.parent)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class Readable:
    """`readable_paths` of a project with the interpreters and tools on `PATH`
    (`tool_paths`), recomputed only when `sys.path`, the set of imported modules or what
    `tools_key` watches changed (resolving every path takes milliseconds)."""

    def __init__(self, project_root: Path, extra: tuple[str, ...]) -> None:
        self.project_root, self.extra = project_root, extra
        self.key: tuple[object, ...] = ()
        self.paths: tuple[str, ...] = ()
        self._lock = threading.Lock()  # two checks starting side by side compute them once

    def __call__(self) -> tuple[str, ...]:
        with self._lock:
            key = (tuple(sys.path), len(sys.modules), tools_key())
            if key != self.key:
                extra = (*self.extra, *tool_paths(cwd=self.project_root))
                self.key, self.paths = key, readable_paths(self.project_root, extra)
            return self.paths


def policy_for(
    settings: CheckSettings,
    readable: tuple[str, ...],
    scratch: Path,
    *,
    project: Path,
    view: Path,
    namespaces_reason: str | None,
    network: bool | None = None,
    memory_mb: int | None = None,
    cpu_seconds: float | None = None,
) -> BoundaryPolicy:
    """The boundary of one run: the settings with this call's overrides. With namespaces
    (`namespaces_reason` None and isolation on) the check sees `project` copy-on-write, its
    writes kept in the folder `view` until the run is over."""
    if not settings.isolation:
        namespaces_reason = "isolation was turned off for this sandbox"
    inside = namespaces_reason is None
    return BoundaryPolicy(
        scratch=str(scratch),
        readable=readable,
        writable=tuple(str(Path(p).resolve()) for p in settings.writable),
        network=settings.network if network is None else network,
        memory_mb=settings.memory_mb if memory_mb is None else memory_mb,
        cpu_seconds=settings.cpu_seconds if cpu_seconds is None else cpu_seconds,
        processes=settings.processes,
        landlock=settings.isolation,
        namespaces=inside,
        namespaces_reason=namespaces_reason,
        project=str(project) if inside else None,
        view=str(view) if inside else None,
    )


def expected_report(policy: BoundaryPolicy) -> dict[str, Any]:
    """What the boundary would say, for a run whose child died before reporting."""
    abi, reason = probe() if policy.landlock else (0, "isolation was turned off")
    project = "copy-on-write" if policy.project else "read-only" if abi else "writable"
    return {
        "isolation": "landlock" if abi else "none",
        "reason": reason,
        "landlock_abi": abi,
        "writable": policy.writable_paths(),
        "network": policy.network or not abi,
        "signals_scoped": abi >= 6,
        "project": project,
        "project_reason": policy.namespaces_reason,
        "processes": "pid namespace" if policy.namespaces else "subreaper",
        "limits": {
            "memory_mb": policy.memory_mb,
            "cpu_seconds": policy.cpu_seconds,
            "processes": policy.processes,
        },
        "notes": ["the child ended before reporting its boundary"],
    }


def limits_hit(
    outcome: dict[str, Any],
    signal_name: str | None,
    *,
    timed_out: bool,
    output_truncated: bool,
    policy: BoundaryPolicy,
    own_signal: bool = False,
) -> list[str]:
    """The limits a finished run ran into: memory, cpu, processes, output, wall_time
    (`own_signal`: the check itself sent the signal it died of, which is no limit)."""
    hit = []
    exc_type = outcome.get("exc_type")
    if policy.memory_mb is not None and exc_type == "MemoryError":
        hit.append("memory")
    cpu_kill = (
        policy.cpu_seconds is not None
        and signal_name == "SIGKILL"
        and not (timed_out or own_signal)
    )
    if signal_name == "SIGXCPU" or cpu_kill:
        hit.append("cpu")
    refused = exc_type == "BlockingIOError" or outcome.get("refused_starts")
    if policy.processes is not None and refused:
        hit.append("processes")
    if output_truncated:
        hit.append("output")
    if timed_out:
        hit.append("wall_time")
    return hit
