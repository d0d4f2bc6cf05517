"""The check boundary: one function that walls in a process before it runs untrusted code.

    policy = BoundaryPolicy(scratch="/tmp/liveforge-check-x", readable=readable_paths(root))
    # in the child, after fork and before any user code:
    report = apply_boundary(policy)      # {"isolation": "landlock", "landlock_abi": 7, ...}

`apply_boundary` applies, in this order: resource limits (address space, CPU time, number of
processes; hard limits, so the code cannot raise them again), the parent-death signal
(SIGKILL when the parent that forked us dies), no capabilities (root included, so limits and
file permissions hold), and Landlock (`_landlock`): read-only access to what the check
needs, write access to its scratch folder only, no TCP unless `network`, no signals to and no
abstract unix sockets of processes outside its own tree. The check's processes stay in the
sandbox's process tree: the forking process is a child subreaper (`become_subreaper`) and
kills whatever a run leaves behind (`kill_descendants`).

Where the platform has no Landlock (or the kernel refuses it) the function still returns,
with `isolation: none` and the reason: the caller runs the check and says so, never
silently. The policy is a plain dataclass and the module uses the standard library only,
so a sandbox child loads it by file path and any forked process (a fork of a live front end
too) can call it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__:  # imported as liveforge.kernel._boundary
    from liveforge.kernel import _landlock, _seccomp
else:  # loaded by file path in a sandbox template, which never imports liveforge
    import importlib.util

    def _sibling(name: str) -> Any:
        spec = importlib.util.spec_from_file_location(
            f"_liveforge_sandbox{name}", Path(__file__).with_name(f"{name}.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    _landlock, _seccomp = _sibling("_landlock"), _sibling("_seccomp")

__all__ = [
    "BoundaryPolicy",
    "apply_boundary",
    "become_subreaper",
    "exit_with_parent",
    "kill_descendants",
    "prepare",
    "probe",
    "protect_process",
    "readable_paths",
]

LINUX = sys.platform.startswith("linux")
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
SYSTEM_READABLE = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
# /proc: system-wide facts only; other processes' folders (environments, memory) stay out.
PROC_READABLE = (
    "cpuinfo meminfo stat loadavg uptime version filesystems mounts sys cgroups swaps "
    "vmstat zoneinfo pressure diskstats partitions devices crypto"
).split()
ETC_HIDDEN = frozenset("shadow shadow- gshadow gshadow- ssh sudoers sudoers.d security".split())
# what programs commonly read in /etc, for a check inside another check (which cannot list it)
ETC_COMMON = (
    "ssl ca-certificates pki crypto-policies alternatives localtime timezone zoneinfo "
    "resolv.conf hosts host.conf gai.conf nsswitch.conf passwd group protocols services "
    "mime.types os-release ld.so.cache ld.so.conf ld.so.conf.d"
).split()
DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
)
DEVICE_FOLDERS = ("/dev/shm", "/dev/pts")  # POSIX semaphores (multiprocessing) and ptys


@dataclass(frozen=True)
class BoundaryPolicy:
    """What a check may do. Paths are absolute; limits are None for "no limit".

    `memory_mb` is address space the check may add to what the process has when the
    boundary is applied (a forked child shares its parent's pre-imported modules).
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


@dataclass
class _Report:
    isolation: str = "none"
    reason: str | None = None
    landlock_abi: int = 0
    writable: list[str] = field(default_factory=list)
    network: bool = True
    signals_scoped: bool = False
    limits: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def probe() -> tuple[int, str | None]:
    """The Landlock ABI this platform offers and, when it is 0, why there is none."""
    if not LINUX:
        return 0, f"no Landlock on {sys.platform}: checks run without a file-system boundary"
    abi = _landlock.landlock_abi()
    if abi == 0:
        return 0, "the Linux kernel offers no Landlock (it needs 5.13 or newer, enabled at boot)"
    return abi, None


def readable_paths(project_root: str | Path, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """What a check reads: the system's libraries, the interpreter and its site-packages,
    every `sys.path` entry and loaded package folder, and the project."""
    found: dict[str, None] = {}
    candidates = [
        *SYSTEM_READABLE,
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        str(Path(sys.executable).resolve().parent),
        *(p for p in sys.path if p),
        *_loaded_package_dirs(),
        str(project_root),
        *extra,
    ]
    for path in candidates:
        resolved = str(Path(path).resolve())
        if os.path.exists(resolved):
            found.setdefault(resolved)
    return tuple(found)


def _loaded_package_dirs() -> set[str]:
    """Folders of imported top-level modules (editable installs are not on sys.path)."""
    dirs = set()
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if "." in name or not isinstance(filename, str):
            continue
        folder = Path(filename).parent
        dirs.add(str(folder.parent if folder.name == name else folder))
    return dirs


def prepare(policy: BoundaryPolicy) -> int | None:
    """The Landlock ruleset of `policy` built ahead of time (an fd to pass to
    `apply_boundary` in forked children), or None where Landlock is off or missing."""
    abi, _ = probe()
    if not (abi and policy.landlock):
        return None
    try:
        return int(_landlock.build(_ruleset(policy, abi)))
    except OSError:
        return None  # apply_boundary will meet the same refusal and report it


def apply_boundary(policy: BoundaryPolicy, prepared: int | None = None) -> dict[str, Any]:
    """Wall in this process (and everything it starts) as `policy` says; a report of what
    applied: isolation level, Landlock ABI, writable paths, network, limits, notes.

    `prepared` is a ruleset fd from `prepare(policy)` made before the fork; without one the
    ruleset is built here."""
    report = _Report(writable=policy.writable_paths(), network=policy.network)
    report.limits = _set_limits(policy, report.notes)
    if policy.parent_pid is not None:
        exit_with_parent(policy.parent_pid)
    _drop_capabilities()
    abi, reason = probe()
    if not policy.landlock:
        abi, reason = 0, "isolation was turned off for this sandbox"
    if abi:
        try:
            if prepared is not None:
                _landlock.enforce(prepared)
            else:
                _landlock.restrict(_ruleset(policy, abi))
        except OSError as exc:
            abi, reason = 0, f"the kernel refused Landlock: {exc}"
    report.landlock_abi = abi
    if abi:
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
    else:
        report.reason = reason
        report.network = True
        report.writable = ["everything the user may write"]
    return asdict(report)


def _ruleset(policy: BoundaryPolicy, abi: int) -> Any:
    read = [*policy.readable, *_etc_entries(), *(f"/proc/{n}" for n in PROC_READABLE)]
    write = [*policy.writable_paths(), *DEVICE_FOLDERS]
    return _landlock.Ruleset(
        abi,
        read=tuple(read),
        write=tuple(write),
        devices=DEVICES,
        network=policy.network,
        scope=True,
    )


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _etc_entries() -> list[str]:
    """/etc, entry by entry, without password hashes, ssh keys, sudo rules or private TLS
    keys (a rule cannot exclude what lies beneath a granted folder)."""
    try:
        names = os.listdir("/etc")
    except OSError:
        names = ETC_COMMON
    paths = []
    for name in names:
        if name in ETC_HIDDEN:
            continue
        if name != "ssl":
            paths.append(f"/etc/{name}")
            continue
        try:
            paths += [f"/etc/ssl/{n}" for n in os.listdir("/etc/ssl") if n != "private"]
        except OSError:
            paths.append("/etc/ssl/certs")
    return paths


def _set_limits(policy: BoundaryPolicy, notes: list[str]) -> dict[str, Any]:
    limits: dict[str, Any] = {
        "memory_mb": policy.memory_mb,
        "cpu_seconds": policy.cpu_seconds,
        "processes": policy.processes,
    }
    if policy.memory_mb is not None:
        try:
            with open("/proc/self/statm") as statm:
                current = int(statm.read().split()[0]) * resource.getpagesize()
        except OSError:  # inside another check's boundary, which keeps its own limit
            notes.append("memory: /proc/self is closed here; the enclosing limit applies")
        else:
            _hard_limit(resource.RLIMIT_AS, current + policy.memory_mb * 1024 * 1024)
    if policy.cpu_seconds is not None:
        used = sum(os.times()[:2])
        seconds = max(1, int(used + policy.cpu_seconds + 0.999))
        # SIGXCPU at the soft limit, SIGKILL one second later at the hard one
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    if policy.processes is not None:
        if os.geteuid() == 0:
            notes.append("the process limit does not bind root (the kernel exempts uid 0)")
        try:
            _hard_limit(resource.RLIMIT_NPROC, _user_processes() + policy.processes)
        except OSError:  # inside another check's boundary /proc cannot be listed
            notes.append("processes: /proc is closed here; the enclosing limit applies")
    return limits


def _hard_limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _user_processes() -> int:
    """Processes (threads count too) of this user now: RLIMIT_NPROC counts all of them."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):  # OSError when /proc cannot be listed
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
    return count


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_libc = ctypes.CDLL(None, use_errno=True)
_CAP_V3 = 0x20080522


def _drop_capabilities() -> None:
    """No capabilities now or after exec: root keeps its uid but loses its overrides (raising
    hard limits, reading other processes' memory, ignoring file modes)."""
    if not LINUX or (os.geteuid() != 0 and not _has_capabilities()):
        return
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 or ctypes.get_errno() != errno.EINVAL:
        cap += 1
        if cap > 63:
            break
    data = (_CapData * 2)()
    _libc.capset(ctypes.byref(_CapHeader(_CAP_V3, 0)), data)


def _has_capabilities() -> bool:
    try:
        with open("/proc/self/status") as status:
            line = next(x for x in status if x.startswith("CapEff:"))
    except (OSError, StopIteration):
        return False
    return int(line.split()[1], 16) != 0


def protect_process() -> bool:
    """Make this process non-dumpable (Linux): its /proc files (environment, memory) are
    closed to other processes of the same user, and no core dump holds its keys. False
    where the platform cannot."""
    return LINUX and int(_libc.prctl(PR_SET_DUMPABLE, 0)) == 0


def exit_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """Have the kernel send `sig` to this process when the thread that started it ends
    (Linux); exit now if `parent_pid` is no longer the parent (it died before the signal
    was armed)."""
    if not LINUX:
        return
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(0)


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (not init's), so
    `kill_descendants` can find them; False where the platform cannot."""
    return LINUX and int(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1)) == 0


def kill_descendants(timeout: float = 2.0) -> int:
    """SIGKILL every child of this process and reap it, until none is left (orphans of the
    killed ones come back to a subreaper); the number of processes reaped."""
    reaped, deadline = 0, time.monotonic() + timeout
    while (children := _children()) and time.monotonic() < deadline:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in children:  # a killed parent's orphans are ours once it is reaped
            try:
                os.waitpid(pid, 0)
                reaped += 1
            except ChildProcessError:
                pass
    return reaped


def _children() -> list[int]:
    pids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as file:
                pids += [int(p) for p in file.read().split()]
    except OSError:
        return []
    return pids
