"""A process that looks like it runs on a kernel without Landlock: a seccomp filter makes
the three Landlock system calls fail with ENOSYS, as they do where Landlock was never
built in. Installed before liveforge starts, it holds for every process liveforge starts
(seccomp filters are inherited across fork and exec).

    python -c "import no_landlock; no_landlock.install(); ..."   # then start liveforge
"""

from __future__ import annotations

import ctypes
import errno
import platform

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LD_ABS, JEQ, RET = 0x20, 0x15, 0x06
# landlock_create_ruleset, landlock_add_rule, landlock_restrict_self (every architecture)
LANDLOCK_CALLS = (444, 445, 446)
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


class _Filter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def supported() -> bool:
    """True where `install` knows this machine's architecture."""
    return platform.machine() in ARCHES


def install() -> None:
    """Make landlock_* system calls fail with ENOSYS in this process and all it starts."""
    create, add, restrict = LANDLOCK_CALLS
    steps = [
        (LD_ABS, 0, 0, 4),  # 0  arch
        (JEQ, 0, 5, ARCHES[platform.machine()]),  # 1  another arch: allow
        (LD_ABS, 0, 0, 0),  # 2  system call number
        (JEQ, 2, 0, create),  # 3
        (JEQ, 1, 0, add),  # 4
        (JEQ, 0, 1, restrict),  # 5
        (RET, 0, 0, RET_ERRNO | errno.ENOSYS),  # 6
        (RET, 0, 0, RET_ALLOW),  # 7
    ]
    filters = (_Filter * len(steps))(*(_Filter(*step) for step in steps))
    program = _Program(len(steps), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
