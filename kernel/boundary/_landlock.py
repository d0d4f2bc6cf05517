"""Landlock through plain syscalls: which ABI the kernel has, and restricting this process.

Landlock (Linux >= 5.13) lets an unprivileged process give up access rights for itself and
every process it starts; a restriction can never be lifted, and it holds for root too. What
each ABI version adds (see the kernel's landlock.rst):

    1  file-system access rights on path hierarchies; no ptrace of processes outside
    2  LANDLOCK_ACCESS_FS_REFER (linking or renaming across folders)
    3  LANDLOCK_ACCESS_FS_TRUNCATE
    4  TCP bind and connect rights (network)
    5  LANDLOCK_ACCESS_FS_IOCTL_DEV
    6  scoping: no signals to, and no abstract unix sockets of, processes outside the domain

    abi = landlock_abi()          # 0 when the kernel (or seccomp) does not offer Landlock
    restrict(Ruleset(abi, read=["/usr"], write=["/tmp/scratch"], network=False))

This module uses the standard library only: it is also loaded by file path inside sandbox
children, which must not import `liveforge`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "LandlockError",
    "Ruleset",
    "add_rules",
    "build",
    "enforce",
    "landlock_abi",
    "restrict",
]

# The syscall numbers are the same on every architecture (they came after the unification).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
PR_SET_NO_NEW_PRIVS = 38

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REFER = 1 << 13
FS_TRUNCATE = 1 << 14
FS_IOCTL_DEV = 1 << 15
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

READ_ACCESS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class LandlockError(OSError):
    """Landlock could not be applied; `errno` and the message say which step failed."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _syscall(number: int, *args: object) -> int:
    result = int(_libc.syscall(number, *args))
    if result < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, os.strerror(code))
    return result


def landlock_abi() -> int:
    """The Landlock ABI version the running kernel offers; 0 when there is none."""
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    except LandlockError:  # ENOSYS (old kernel), EOPNOTSUPP (disabled at boot), EPERM
        return 0


def fs_access(abi: int) -> int:
    """Every file-system right the ABI knows (all of them are handled, i.e. denied unless
    a rule allows them)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


@dataclass(frozen=True)
class Ruleset:
    """What a restricted process may still do.

    `read` paths (and everything beneath them) may be read and executed, `write` paths also
    written, created in and removed from; `devices` are single device files (such as
    /dev/null) that may be read and written. `network=False` denies TCP bind and connect
    (ABI >= 4); `scope=True` denies signals and abstract unix sockets to processes outside
    the restricted tree (ABI >= 6). Paths that do not exist are skipped.
    """

    abi: int
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    network: bool = True
    scope: bool = True

    def attr(self) -> tuple[_RulesetAttr, int]:
        """The ruleset attribute and the size this ABI expects for it."""
        net = NET_BIND_TCP | NET_CONNECT_TCP if self.abi >= 4 and not self.network else 0
        scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET if self.abi >= 6 and self.scope else 0
        size = 24 if self.abi >= 6 else 16 if self.abi >= 4 else 8
        return _RulesetAttr(fs_access(self.abi), net, scoped), size


def build(ruleset: Ruleset) -> int:
    """A Landlock ruleset fd for `ruleset`, to `enforce` now or in forked children later
    (building once and enforcing in each child saves adding every rule per child)."""
    if ruleset.abi < 1:
        raise LandlockError(errno.ENOSYS, "this kernel has no Landlock")
    attr, size = ruleset.attr()
    fd = _syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    try:
        add_rules(fd, ruleset)
    except BaseException:
        os.close(fd)
        raise
    return fd


def add_rules(ruleset_fd: int, ruleset: Ruleset) -> None:
    """Add the path rules of `ruleset` (its network and scope settings aside) to a ruleset
    fd that `build` made for the same ABI: how a process finishes, after its own mounts, a
    ruleset prepared before it was forked."""
    handled = fs_access(ruleset.abi)
    _add_paths(ruleset_fd, ruleset.read, READ_ACCESS & handled)
    _add_paths(ruleset_fd, ruleset.write, handled)
    device = (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV) & handled
    _add_paths(ruleset_fd, ruleset.devices, device)


def enforce(ruleset_fd: int) -> None:
    """Restrict this process (and all it starts later) to the ruleset, for good.

    Sets no-new-privileges first, as Landlock requires. Raises LandlockError when the
    kernel refuses; the process is then unrestricted.
    """
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise LandlockError(code, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(code)}")
    _syscall(SYS_RESTRICT_SELF, ruleset_fd, 0)


def restrict(ruleset: Ruleset) -> None:
    """`build` and `enforce` in one step."""
    fd = build(ruleset)
    try:
        enforce(fd)
    finally:
        os.close(fd)


def _add_paths(ruleset_fd: int, paths: Iterable[str], access: int) -> None:
    for path in paths:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # a path that does not exist here grants nothing
        try:
            allowed = access
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                allowed &= FILE_ONLY  # directory rights on a file are an error (EINVAL)
            rule = _PathBeneath(allowed, fd)
            _syscall(SYS_ADD_RULE, ruleset_fd, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        finally:
            os.close(fd)
