"""A seccomp filter that leaves a process TCP as its only internet protocol.

Landlock (ABI >= 4) rules cover TCP bind and connect only; a check with the network off
could still send UDP datagrams (DNS included), SCTP or raw packets. `deny_non_tcp_sockets`
installs a small BPF program that refuses `socket()` for AF_INET / AF_INET6 unless it asks
for a plain TCP stream, and refuses `io_uring_setup` (io_uring can create sockets without
the `socket` system call). Unix sockets and everything else stay as they were.

The filter is for the running architecture (x86-64 or AArch64); elsewhere the function
returns False and the caller reports that datagrams are not filtered. Standard library
only: sandbox children load this file by path.
"""

from __future__ import annotations

import ctypes
import errno
import platform

__all__ = ["deny_non_tcp_sockets"]

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
LD_ABS, JEQ, AND, RET = 0x20, 0x15, 0x54, 0x06
AF_INET, AF_INET6, SOCK_STREAM, IPPROTO_TCP = 2, 10, 1, 6
IO_URING_SETUP = 425
# machine -> (AUDIT_ARCH_*, number of socket())
ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}


class _Filter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _program(arch: int, socket_nr: int) -> list[tuple[int, int, int, int]]:
    # seccomp_data: nr at 0, arch at 4, args[0] at 16, args[1] at 24, args[2] at 32
    # (low words, little endian); jumps count instructions after the current one.
    allow, deny = 14, 15
    return [
        (LD_ABS, 0, 0, 4),  # 0  arch
        (JEQ, 0, allow - 2, arch),  # 1
        (LD_ABS, 0, 0, 0),  # 2  syscall number
        (JEQ, deny - 4, 0, IO_URING_SETUP),  # 3
        (JEQ, 0, allow - 5, socket_nr),  # 4
        (LD_ABS, 0, 0, 16),  # 5  domain
        (JEQ, 1, 0, AF_INET),  # 6
        (JEQ, 0, allow - 8, AF_INET6),  # 7
        (LD_ABS, 0, 0, 24),  # 8  type
        (AND, 0, 0, 0xF),  # 9  without SOCK_NONBLOCK / SOCK_CLOEXEC
        (JEQ, 0, deny - 11, SOCK_STREAM),  # 10
        (LD_ABS, 0, 0, 32),  # 11 protocol: 0 (default) or TCP, not SCTP
        (JEQ, 1, 0, 0),  # 12
        (JEQ, 0, deny - 14, IPPROTO_TCP),  # 13
        (RET, 0, 0, RET_ALLOW),  # 14
        (RET, 0, 0, RET_ERRNO | errno.EACCES),  # 15
    ]


def deny_non_tcp_sockets() -> bool:
    """Install the filter in this process (inherited by all it starts); False where this
    architecture is not known or the kernel refused."""
    known = ARCHES.get(platform.machine())
    if known is None:
        return False
    steps = _program(*known)
    filters = (_Filter * len(steps))(*(_Filter(*step) for step in steps))
    program = _Program(len(steps), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return int(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0)) == 0
