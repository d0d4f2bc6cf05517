"""The check boundary: what walls in a forked process before it runs untrusted code.

    policy = BoundaryPolicy(scratch="/tmp/liveforge-check-x", readable=readable_paths(root))
    handshake = Handshake() if policy.namespaces else None    # parent, before the fork
    # in the child, after fork and before any user code:
    report = contain(policy, handshake)  # {"isolation": "landlock", "landlock_abi": 7, ...}
    # in the parent, after the fork: handshake.parent_side(); handshake.serve(child_pid)

`contain` first arms the parent-death signal (SIGKILL when the process that forked the
check dies), then, where the policy asks for namespaces (`_namespaces`), moves the check
into user, mount and pid namespaces of its own: the project is seen copy-on-write
(`_overlay`), every process the check starts dies with it, and a check run by root is
nobody outside, so its process limit binds. Then `apply_boundary` applies resource limits
(`_limits`; hard, so the code cannot raise them again), drops capabilities (`_processes`;
root of the namespace keeps only what it needs to use the project's files), and restricts
the process with Landlock (`_landlock`): read-only access to what the check needs, write
access to its scratch folder (and the copy-on-write project) only, no TCP unless
`network`, no signals to and no abstract unix sockets of processes outside its own tree;
with the network off, seccomp (`_seccomp`) refuses the other internet sockets.

Where the platform has no Landlock (or the kernel refuses it) the check still runs, with
`isolation: none` and the reason; without namespaces the project is read-only and the
sandbox's template, a child subreaper, kills what a run leaves behind — each said in the
report, never silently. The policy is a plain dataclass and the modules use the standard
library only, so a sandbox child loads them by file path and any forked process (a fork of
a live front end too) can use them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

if __package__:  # imported as liveforge.kernel.boundary._boundary
    from liveforge.kernel.boundary import (
        _limits,
        _namespaces,
        _overlay,
        _processes,
        _rules,
        _seccomp,
    )
else:  # loaded by file path (`load_sibling` of `_child` in a sandbox template, or of the
    # `_confine` launcher), which never imports liveforge
    _sibling = sys.modules["_liveforge_sandbox_loader"].load_sibling

    # in this order: `_namespaces` finds `_overlay` loaded, `_rules` finds `_landlock`
    _, _seccomp, _limits, _processes, _overlay, _namespaces, _rules = (
        _sibling(name)
        for name in (
            "_landlock",
            "_seccomp",
            "_limits",
            "_processes",
            "_overlay",
            "_namespaces",
            "_rules",
        )
    )

Handshake = _namespaces.Handshake
Rulesets, prepare, probe, readable_paths = (
    _rules.Rulesets,
    _rules.prepare,
    _rules.probe,
    _rules.readable_paths,
)
DEVICES, DEVICE_FOLDERS = _rules.DEVICES, _rules.DEVICE_FOLDERS

__all__ = [
    "BoundaryPolicy",
    "Handshake",
    "Rulesets",
    "apply_boundary",
    "contain",
    "prepare",
    "probe",
    "readable_paths",
]

LINUX = sys.platform.startswith("linux")


@dataclass(frozen=True)
class BoundaryPolicy:
    """What a check may do. Paths are absolute; limits are None for "no limit".

    `memory_mb` is address space the check may add to what the process has when the
    boundary is applied (a forked child shares its parent's pre-imported modules).
    `namespaces` asks for user, mount and pid namespaces of the check's own (the caller has
    probed that they work; `namespaces_reason` says why not when they do not); `project`
    is then seen copy-on-write, its writes landing in the folder `view` (see `_overlay`).
    """

    scratch: str
    readable: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    network: bool = False
    memory_mb: int | None = None
    cpu_seconds: float | None = None
    processes: int | None = None
    parent_pid: int | None = None
    landlock: bool = True
    namespaces: bool = False
    namespaces_reason: str | None = None
    project: str | None = None
    view: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BoundaryPolicy:
        """The policy from its `asdict` form (how it travels to a sandbox child)."""
        fields = dict(data)
        for key in ("readable", "writable"):
            fields[key] = tuple(fields.get(key, ()))
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def writable_paths(self) -> list[str]:
        """The folders a check may write: `writable`, and `scratch` unless it is inside one."""
        inside = any(_within(self.scratch, folder) for folder in self.writable)
        return [*self.writable] if inside else [self.scratch, *self.writable]

    def copy_on_write(self) -> Any:
        """The `_overlay.View` of the project, or None when the project is not viewed so."""
        if not (self.namespaces and self.project and self.view):
            return None
        return _overlay.View.beside(self.project, self.view, make=False)


@dataclass
class _Report:
    isolation: str = "none"
    reason: str | None = None
    landlock_abi: int = 0
    writable: list[str] = field(default_factory=list)
    network: bool = True
    signals_scoped: bool = False
    project: str = "read-only"
    project_reason: str | None = None
    processes: str = "subreaper"
    limits: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def contain(
    policy: BoundaryPolicy,
    handshake: Any | None = None,
    prepared: int | None = None,
    entered: Any | None = None,
) -> dict[str, Any]:
    """Wall in this freshly forked child as `policy` says (see the module's text); the
    report of what applied. `handshake` (a `Handshake` the parent made before the fork and
    serves after it) is needed for namespaces; without one the check stays in its parent's.
    In namespaces this returns in a new process (pid 2 of the check's pid namespace); the
    forked one waits for it and ends as it ends. `prepared` is a ruleset fd from `prepare`
    (closed here). `entered` is what `_namespaces.enter` set up ahead of the run in a check
    made before its request came (see `_spare`): only the project's view is mounted now."""
    if entered is not None:
        _namespaces.mount_view(entered, policy.copy_on_write())
    elif policy.parent_pid is not None:
        _processes.die_with_parent(policy.parent_pid)
    if entered is None and handshake is not None:
        handshake.child_side()
        entered = _namespaces.enter(handshake, policy.copy_on_write())
    report = apply_boundary(policy, entered, prepared)
    _use_scratch(policy.scratch)
    return report


def _use_scratch(scratch: str) -> None:
    """Temporary files, caches (jedi, pip, ...) and the home folder (IPython's history,
    tools' settings) are in the scratch folder from now on: the usual places are outside
    the boundary."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        os.environ[name] = scratch
    os.environ["XDG_CACHE_HOME"] = os.path.join(scratch, ".cache")
    home = os.path.join(scratch, "home")
    os.makedirs(home, exist_ok=True)
    os.environ["HOME"] = home
    import tempfile

    tempfile.tempdir = None  # a template may have cached the old answer


def apply_boundary(
    policy: BoundaryPolicy, entered: Any | None = None, prepared: int | None = None
) -> dict[str, Any]:
    """Limits, capabilities and Landlock for this process (and everything it starts), as
    `policy` says; a report of what applied: isolation level, Landlock ABI, writable paths,
    the project, network, processes, limits, notes. `entered` is what `_namespaces.enter`
    set up, if it ran; `prepared`, a ruleset fd from `prepare` (closed here)."""
    report = _Report(writable=policy.writable_paths(), network=policy.network)
    inside = entered is not None and entered.namespaces
    base = entered.processes_at_start if entered is not None and inside else None
    _describe_namespaces(report, policy, entered)
    report.limits = _limits.set_limits(
        memory_mb=policy.memory_mb,
        cpu_seconds=policy.cpu_seconds,
        processes=policy.processes,
        notes=report.notes,
        base=base,
    )
    # root of a user namespace (the check's own, or an enclosing check's) keeps what it
    # needs to use the files it sees; real root keeps nothing
    nested = inside or _processes.in_user_namespace()
    _processes.drop_capabilities(_processes.FILE_CAPABILITIES if nested else 0)
    abi, reason = probe()
    if not policy.landlock:
        abi, reason = 0, "isolation was turned off for this sandbox"
    if abi:
        try:
            _rules.restrict(policy, abi, entered, prepared)
        except OSError as exc:
            abi, reason = 0, f"the kernel refused Landlock: {exc}"
    elif prepared is not None:
        os.close(prepared)
    report.landlock_abi = abi
    if abi:
        _describe_landlock(report, policy, abi)
    else:
        report.reason = reason
        report.network = True
        report.writable = ["everything the user may write"]
        report.project, report.project_reason = "writable", "no file-system isolation"
    return asdict(report)


def _describe_namespaces(report: _Report, policy: BoundaryPolicy, entered: Any | None) -> None:
    if entered is None or not entered.namespaces:
        reason = entered.reason if entered is not None else policy.namespaces_reason
        report.project_reason = reason or "no user namespace was asked for"
        report.processes = "subreaper"
        return
    report.processes = "pid namespace"
    report.project, report.project_reason = entered.project, entered.project_reason
    if entered.project == "copy-on-write" and policy.project:
        report.writable.append(f"{policy.project} (copy-on-write, discarded)")
    report.notes += entered.notes


def _describe_landlock(report: _Report, policy: BoundaryPolicy, abi: int) -> None:
    report.isolation = "landlock"
    report.writable += [*DEVICE_FOLDERS, "device files: " + " ".join(DEVICES)]
    report.signals_scoped = abi >= 6
    if abi < 6:
        report.notes.append("signals are not scoped: Landlock ABI < 6")
    if abi < 4 and not policy.network:
        report.network = True
        report.notes.append("network is not restricted: Landlock ABI < 4")
    elif not policy.network and _seccomp.deny_non_tcp_sockets():
        report.notes.append("network off: no TCP (Landlock), no UDP or raw sockets (seccomp)")
    elif not policy.network:
        report.notes.append("network off for TCP only: UDP sockets are not filtered here")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
