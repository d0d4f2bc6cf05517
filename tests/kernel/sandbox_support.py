"""Helpers shared by the sandbox tests: real temporary packages and the fixture project."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from liveforge.kernel.checks._sandbox import OverlayModule

SETSID_DAEMONS = """
import os, subprocess
subprocess.Popen(["sleep", "300"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execvp("sleep", ["sleep", "300"])
"""
"""A check's code that starts two daemons in sessions of their own (a `setsid` child and
a double fork): what a boundary must still end with the check."""
FIXTURE_PROJECT = Path(__file__).resolve().parent.parent / "fixtures" / "sandbox" / "project"
SANDBOX_FILES = ("_child.py", "_childpytest.py", "_overlayhook.py")
"""The sandbox's files that run a check and serve the overlay: never in a check's traceback."""


def shows_sandbox_frames(text: str) -> bool:
    """True when `text` (a traceback, pytest's output) names a file of the sandbox itself."""
    return any(name in text for name in SANDBOX_FILES)


@contextmanager
def temp_package(root: Path, files: dict[str, str]) -> Iterator[str]:
    """A uniquely named package under `root`, on sys.path; yields its name.

    `files` maps paths inside the package ("mod.py", "sub/__init__.py") to their text.
    """
    name = f"pkg_{uuid.uuid4().hex[:10]}"
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for relative, text in files.items():
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text(text)
    sys.path.insert(0, str(root))
    try:
        yield name
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def file_overlay(root: Path, module: str, source: str) -> OverlayModule:
    """An overlay entry for the file-backed module `module` under `root`."""
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    is_package = not path.exists() and (path.with_suffix("") / "__init__.py").exists()
    if is_package:
        path = path.with_suffix("") / "__init__.py"
    return OverlayModule(module, source, str(path), is_package=is_package)


def copy_fixture_project(destination: Path) -> Path:
    """A private copy of the fixture project (its own package, conftest and tests)."""
    shutil.copytree(FIXTURE_PROJECT, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def process_gone(pid: int, wait: float = 10.0) -> bool:
    """True once `pid` no longer runs (gone, or a zombie nobody has reaped yet)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return True
        except PermissionError:  # inside a check's boundary: only kill(pid, 0) can tell
            state = "?"
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


NAMESPACE = (
    "__import__('os').readlink('/proc/self/ns/pid') + ' '"
    " + str(__import__('os').fstat(__import__('os').pidfd_open(1)).st_ino)"
)
"""An expression a check evaluates to name its pid namespace for `in_namespace`: the
namespace's number ("pid:[4026...]") and which process its pid 1 is (the inode number of a
pidfd of it, which Linux >= 6.9 gives no other process until it restarts; before that every
pidfd has the same one, and the number alone decides). The number alone names nothing once
the namespace has ended: the kernel gives the lowest free number to the next namespace
made, on a busy machine within milliseconds, and processes found by it are then another
namespace's (a host made ahead for the next live check, a check of another test)."""

#: An expression a check evaluates to name one of its processes from outside: its pid
#: namespace (as `NAMESPACE`) and its pid there (a check may have a pid namespace of its own).
WHO = NAMESPACE + " + ' ' + str({pid})"


def in_namespace(namespace: str, wait: float = 10.0) -> list[str]:
    """Processes still alive in the pid namespace `namespace` names (as `NAMESPACE` gives
    it), after waiting up to `wait` s for none: each described by its pid, command, state,
    parent and what it waits in, so a failure says which process outlived its check and why.

    The namespace is followed through its pid 1: while that runs, a pidfd of it keeps the
    namespace, and so its number, from being freed and given to another one, so what runs
    under that number is the namespace's own. Once it has ended nothing of the namespace
    runs: the kernel ends every other process of a pid namespace before its pid 1's exit
    completes."""
    link, init = namespace.rsplit(" ", 1)
    pin = _pin(link, int(init))
    if pin is None:
        return []
    try:
        return _alive_in(link, time.monotonic() + wait)
    finally:
        os.close(pin)


def namespace_of(pid: int) -> str:
    """The name `in_namespace` takes for the pid namespace of the running process `pid`,
    as `NAMESPACE` gives it from inside."""
    link = os.readlink(f"/proc/{pid}/ns/pid")
    for init in _inits(link):
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(init)
            try:
                return f"{link} {os.fstat(pidfd).st_ino}"
            finally:
                os.close(pidfd)
    raise AssertionError(f"no pid 1 runs in the pid namespace of {pid} ({link})")


def _pin(link: str, init: int) -> int | None:
    """A pidfd of the pid 1 of the namespace numbered `link` if it is the process `init`
    names (as `NAMESPACE` gives it), or None when that has ended."""
    for pid in _inits(link):
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        if os.fstat(pidfd).st_ino == init:
            return pidfd
        os.close(pidfd)
    return None


def _members(link: str, file: str) -> Iterator[tuple[str, str]]:
    """(pid, text of /proc/<pid>/`file`) of each process here in the pid namespace numbered
    `link` (processes that end meanwhile are left out)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{name}/ns/pid") != link:
                continue
            yield name, Path(f"/proc/{name}/{file}").read_text()
        except OSError:
            continue


def _inits(link: str) -> list[int]:
    """The pids here of the processes that are pid 1 of a namespace numbered `link`."""
    found = []
    for name, status in _members(link, "status"):
        inner = [line.split()[-1] for line in status.splitlines() if line.startswith("NSpid:")]
        if inner == ["1"]:
            found.append(int(name))
    return found


def _alive_in(link: str, deadline: float) -> list[str]:
    while True:
        alive = []
        for name, stat in _members(link, "stat"):
            command = stat[stat.index("(") + 1 : stat.rindex(")")]
            state, parent = stat.rsplit(")", 1)[1].split()[:2]
            if state not in ("Z", "X"):
                alive.append(
                    f"pid {name} ({command}) state {state}, parent {parent}, " + _waits(name)
                )
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def _waits(pid: str) -> str:
    try:
        return "waiting in " + (Path(f"/proc/{pid}/wchan").read_text() or "nothing")
    except OSError:
        return "waiting in ?"


def who_gone(who: str, wait: float = 10.0) -> bool:
    """True once the process `WHO` named no longer runs: by pid in this pid namespace, or,
    when it was in a namespace of its own, once nothing runs in that namespace."""
    namespace, pid = who.rsplit(" ", 1)
    if namespace.split(" ")[0] == os.readlink("/proc/self/ns/pid"):
        return process_gone(int(pid), wait)
    return in_namespace(namespace, wait) == []


def snapshot_tree(root: Path) -> dict[str, bytes]:
    """Every file and folder under `root` (run records aside, which other threads may be
    pruning) with its content."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "sandbox_runs")
        for name in dirs:
            found[str(Path(folder, name).relative_to(root))] = b"<dir>"
        for name in sorted(files):
            path = Path(folder, name)
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


@contextmanager
def loopback_listener() -> Iterator[tuple[int, list[object], threading.Thread]]:
    """A TCP listener on 127.0.0.1 accepting one connection in a thread: (port, the
    accepted connections, the thread)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[object] = []
    listener.settimeout(10)
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted, thread
    finally:
        listener.close()
