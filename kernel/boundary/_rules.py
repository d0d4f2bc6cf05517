"""The Landlock rules of a check: what it reads and writes, built ahead where they are the
same for every check of a policy.

    rulesets = Rulesets()
    fd = rulesets.take(policy)     # before the fork; the child adds its run's own rules:
    restrict(policy, abi, entered, fd)    # its scratch, the copy-on-write project, /proc
    rulesets.make_spare(policy)    # between checks

A check reads the system's libraries, the interpreter with its site-packages, every
`sys.path` entry, the project, /etc without secrets (password hashes, ssh and sudo rules,
private TLS keys) and system-wide /proc files (all of /proc in a pid namespace of its own);
it writes its scratch folder, the extra writable folders, the copy-on-write project and a
few devices. Standard library only: sandbox children load this file by path.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

if __package__:  # imported as liveforge.kernel.boundary._rules
    from liveforge.kernel.boundary import _landlock
else:  # loaded by file path in a sandbox child, after `_landlock` (see `_boundary`)
    _landlock = sys.modules["_liveforge_sandbox_landlock"]

__all__ = [
    "DEVICES",
    "DEVICE_FOLDERS",
    "Rulesets",
    "prepare",
    "probe",
    "readable_paths",
    "restrict",
]

LINUX = sys.platform.startswith("linux")
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


def prepare(policy: Any) -> int | None:
    """A Landlock ruleset fd with the rules of `policy` that hold for every run (what is
    readable, the extra writable folders, devices), made ahead of time to pass to
    `contain` in a forked child; None where Landlock is off or missing. Each fd serves one
    child, which adds its own rules to it."""
    abi, _ = probe()
    if not (abi and policy.landlock):
        return None
    try:
        return int(_landlock.build(_common_rules(policy, abi)))
    except OSError:
        return None  # contain will meet the same refusal and report it


class Rulesets:
    """The Landlock rules every check of a policy shares (`prepare`), built ahead: each
    check gets an fd of its own (it adds its run's rules to it), and the next is made
    between checks (`make_spare`, in the background if need be: adding each rule costs
    about a millisecond, more on a loaded machine)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] = ()
        self._spare: int | None = None

    @staticmethod
    def _key_of(policy: Any) -> tuple[Any, ...]:
        return (policy.readable, policy.writable, policy.network, policy.landlock)

    def take(self, policy: Any) -> int | None:
        """A ruleset fd for a check of `policy`: the spare when it was made for the same
        rules, else one built now. The caller closes it (after the fork)."""
        with self._lock:
            spare, self._spare = self._spare, None
            if spare is not None and self._key_of(policy) == self._key:
                return spare
        if spare is not None:
            os.close(spare)
        return prepare(policy)

    def make_spare(self, policy: Any) -> None:
        """Build the ruleset the next check of `policy` will take."""
        fd = prepare(policy)
        with self._lock:
            old, self._spare, self._key = self._spare, fd, self._key_of(policy)
        if old is not None:
            os.close(old)


def _common_rules(policy: Any, abi: int) -> Any:
    read = (*policy.readable, *_etc_entries(), *(f"/proc/{n}" for n in PROC_READABLE))
    write = (*policy.writable, *DEVICE_FOLDERS)
    return _rules(policy, abi, read, write, devices=DEVICES)


def restrict(policy: Any, abi: int, entered: Any | None, prepared: int | None) -> None:
    """Landlock for this process: the prepared rules (or the same built now) and this
    run's own, made after the namespaces were entered (a rule holds for the file it was
    made on, and the copy-on-write project and a private /proc are new mounts)."""
    if prepared is None:
        prepared = int(_landlock.build(_common_rules(policy, abi)))
    read = ["/proc"] if entered is not None and entered.private_proc else []
    write = [policy.scratch]
    if entered is not None and entered.project == "copy-on-write" and policy.project:
        write.append(policy.project)
    try:
        _landlock.add_rules(prepared, _rules(policy, abi, read, write))
        _landlock.enforce(prepared)
    finally:
        os.close(prepared)


def _rules(
    policy: Any,
    abi: int,
    read: Iterable[str],
    write: Iterable[str],
    devices: tuple[str, ...] = (),
) -> Any:
    return _landlock.Ruleset(
        abi, read=tuple(read), write=tuple(write), devices=devices, network=policy.network
    )


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
