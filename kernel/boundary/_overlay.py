"""A copy-on-write view of a folder: overlayfs mounted over the folder itself, in a mount
namespace of the process's own, so the process (and all it starts) sees the folder at its
real path, may write to it, and nothing it writes reaches the real folder.

    view = View.beside("/src/project", "/tmp/run-1")   # makes /tmp/run-1/upper and work
    # in a fresh child process (forked, or a subprocess's preexec_fn), before it runs anything:
    enter(view)             # own user + mount namespace, overlay mounted over /src/project
    ...                     # writes to /src/project/... land in /tmp/run-1/upper
    # afterwards, in any process:
    changes(view.upper)     # Changes(written=[...], deleted=[...], opaque=[...], ...)
    discard(view)           # remove what the view wrote

How the pieces fit, for callers that set up namespaces themselves (the check boundary maps
the check's ids from its parent): `unshare(USER | MOUNT)`, ids mapped, then `mount(view)`.
`changes` reads an upper folder as plain data: files written or created (content or
metadata), files and folders deleted (overlay *whiteouts*), folders replaced as a whole
(*opaque*: deleted and made again, so nothing of the real one shows through). Applying them
to the real folder is the caller's business.

`probe()` says whether views work here (Linux with user namespaces and overlayfs; not
inside another process that Landlock confines, which may not mount) and, if not, why.
Standard library only: sandbox children load this file by path.
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import os
import shutil
import stat
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "Changes",
    "View",
    "changes",
    "discard",
    "enter",
    "map_root_to",
    "mount",
    "probe",
    "probe_ahead",
    "unshare",
    "write_ids",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
OVERLAY_XATTRS = ("user.overlay.", "trusted.overlay.")

_libc = ctypes.CDLL(None, use_errno=True)
_probed: dict[str, str | None] = {}


@dataclass(frozen=True)
class View:
    """The folders of one copy-on-write view: `root` is seen copy-on-write, its writes land
    in `upper`; `work` is overlayfs's own (on the same file system as `upper`)."""

    root: str
    upper: str
    work: str

    @classmethod
    def beside(
        cls, root: str | os.PathLike[str], folder: str | os.PathLike[str], *, make: bool = True
    ) -> View:
        """A view of `root` whose upper and work folders are `folder`/upper and /work, made
        empty here unless `make` is False (the view of an existing folder)."""
        base = Path(folder)
        if make:
            (base / "upper").mkdir(parents=True)
            (base / "work").mkdir()
        return cls(os.path.abspath(root), str(base / "upper"), str(base / "work"))


@dataclass
class Changes:
    """What a view wrote, as paths relative to its root (sorted, '/'-separated)."""

    written: list[str] = field(default_factory=list)
    """Files and symlinks created or changed (content or metadata)."""
    deleted: list[str] = field(default_factory=list)
    """Files and folders removed (whiteouts)."""
    opaque: list[str] = field(default_factory=list)
    """Folders replaced as a whole: nothing of the real folder's content shows through."""
    folders: list[str] = field(default_factory=list)
    """Folders present in the upper folder (made new, or holding changes)."""

    def to_dict(self) -> dict[str, list[str]]:
        return asdict(self)

    def __bool__(self) -> bool:
        return bool(self.written or self.deleted or self.opaque)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def unshare(flags: int) -> None:
    """`unshare(2)`: this process leaves the namespaces `flags` names (CLONE_NEW*)."""
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def map_root_to(uid: int, gid: int, pid: int | str = "self") -> None:
    """Map uid and gid 0 of `pid`'s new user namespace to `uid` and `gid` outside: what a
    process may do with its own ids, for itself (ids read *before* it unshared) or for a
    child. Inside, the process is root of its namespace; outside, nobody new."""
    write_ids(pid, f"0 {uid} 1\n", f"0 {gid} 1\n", deny_setgroups=True)


def write_ids(pid: int | str, uid_map: str, gid_map: str, *, deny_setgroups: bool) -> None:
    """Write the uid and gid maps of `pid`'s user namespace (see user_namespaces(7));
    `deny_setgroups` first turns setgroups off there, which an unprivileged writer needs."""
    folder = f"/proc/{pid}"
    steps = [("uid_map", uid_map), ("gid_map", gid_map)]
    if deny_setgroups:
        steps.insert(0, ("setgroups", "deny"))
    for name, text in steps:
        # one write(2) on a fresh descriptor: the kernel takes a map only that way
        fd = os.open(f"{folder}/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        except OSError as exc:
            raise OSError(exc.errno, f"writing {name}: {exc.strerror}") from None
        finally:
            os.close(fd)


def _escaped(path: str) -> str:
    """A path as an overlayfs option value (',' and ':' separate values there)."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def mount(view: View) -> None:
    """Mount `view` over its root in this process's mount namespace, after making every
    mount private (so nothing propagates out). The caller must own the namespace (be root in
    it); OSError says what the kernel refused."""
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making mounts private")
    options = ",".join(
        f"{key}={_escaped(path)}"
        for key, path in (("lowerdir", view.root), ("upperdir", view.upper), ("workdir", view.work))
    )
    source, target = b"overlay", os.fsencode(view.root)
    # user.* attributes work in a user namespace, trusted.* (the default) only for real
    # root; `volatile` (Linux >= 5.10) skips syncing the upper folder, which otherwise costs
    # a journal commit when the view is unmounted (tens of ms): its writes are never kept
    # across a crash, only read back or discarded.
    for extra in (",userxattr,volatile", ",userxattr", ",volatile", ""):
        data = os.fsencode(options + extra)
        if _libc.mount(source, target, b"overlay", 0, data) == 0:
            break
        code = ctypes.get_errno()
        if code != errno.EINVAL or not extra:
            raise OSError(code, f"mounting the copy-on-write view: {os.strerror(code)}")
    _follow_cwd(view.root)


def _follow_cwd(root: str) -> None:
    """Step into the view when the working folder is beneath its root (a process keeps the
    folder it was in, which is now the hidden real one)."""
    try:
        cwd = os.getcwd()
    except OSError:
        return
    if cwd == root or cwd.startswith(root.rstrip("/") + "/"):
        os.chdir(cwd)


def enter(view: View) -> None:
    """Give this process (single-threaded, about to run what must not touch the real
    folder) a user and mount namespace of its own, with `view` mounted over its root. For a
    subprocess, call it as `preexec_fn`; for a fork, first thing in the child."""
    uid, gid = os.geteuid(), os.getegid()
    unshare(CLONE_NEWUSER | CLONE_NEWNS)
    map_root_to(uid, gid)
    mount(view)


def changes(upper: str | os.PathLike[str]) -> Changes:
    """What a view with this upper folder wrote, as plain data (see `Changes`)."""
    found = Changes()
    base = os.fspath(upper)
    for folder, dirs, files in os.walk(base):
        relative = os.path.relpath(folder, base)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        for name in sorted(dirs):
            path = os.path.join(folder, name)
            if os.path.islink(path):
                found.written.append(prefix + name)
                continue
            found.folders.append(prefix + name)
            if _overlay_attr(path, "opaque") == b"y":
                found.opaque.append(prefix + name)
        for name in sorted(files):
            path = os.path.join(folder, name)
            target = found.deleted if _whiteout(path) else found.written
            target.append(prefix + name)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    for listed in (found.written, found.deleted, found.opaque, found.folders):
        listed.sort()
    return found


def _whiteout(path: str) -> bool:
    """A whiteout: a 0/0 character device, or (kernels >= 6.7) an empty file marked so."""
    info = os.lstat(path)
    if stat.S_ISCHR(info.st_mode):
        return info.st_rdev == 0
    empty = stat.S_ISREG(info.st_mode) and info.st_size == 0
    return empty and _overlay_attr(path, "whiteout") is not None


def _overlay_attr(path: str, name: str) -> bytes | None:
    for prefix in OVERLAY_XATTRS:
        try:
            return os.getxattr(path, prefix + name, follow_symlinks=False)
        except OSError:
            continue
    return None


def discard(view: View) -> None:
    """Remove the view's upper and work folders (overlayfs leaves a folder there that
    nobody may enter until its mode is changed)."""
    for folder in (view.upper, view.work):
        for inner, dirs, _ in os.walk(folder):
            for name in dirs:
                try:
                    os.chmod(os.path.join(inner, name), 0o700, follow_symlinks=False)
                except OSError:
                    continue
        shutil.rmtree(folder, ignore_errors=True)


_PROBE = """
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("_liveforge_overlay_probe", sys.argv[1])
overlay = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(overlay)
base = sys.argv[2]
os.mkdir(os.path.join(base, "lower"))
view = overlay.View.beside(os.path.join(base, "lower"), os.path.join(base, "view"))
try:
    overlay.enter(view)
    with open(os.path.join(view.root, "written"), "w") as file:
        file.write("x")
except OSError as exc:
    print(exc.strerror or exc); sys.exit(1)
sys.exit(0 if os.listdir(view.upper) == ["written"] else 2)
"""


def probe(folder: str | os.PathLike[str] | None = None) -> str | None:
    """Why copy-on-write views cannot be made here (upper folders in `folder`, by default
    the temporary folder), or None when they can. Tried once per process and folder, in a
    short-lived child process (started already if `probe_ahead` was called)."""
    base = _base(folder)
    with _probing:  # two checks starting side by side probe once
        if base in _probed:
            return _probed[base]
        if not sys.platform.startswith("linux"):
            reason: str | None = f"no overlay file system on {sys.platform}"
        else:
            started = _pending.pop(base, None) or _start(base)
            reason = started if isinstance(started, str) else _finish(*started)
        _probed[base] = reason
        return reason


def probe_ahead(folder: str | os.PathLike[str] | None = None) -> None:
    """Start `probe`'s child process now, and go on: a later `probe` of the same folder
    only waits for its answer (a one-shot check probes while its front end imports)."""
    base = _base(folder)
    with _probing:
        if sys.platform.startswith("linux") and base not in _probed and base not in _pending:
            if not _pending:  # one nobody asked for (the command failed first) is ended
                atexit.register(_end_pending)
            _pending[base] = _start(base)


_probing = threading.Lock()
_pending: dict[str, tuple[subprocess.Popen[str], str] | str] = {}
"""Probes started ahead, by folder: the child and its scratch folder (or why none started)."""


def _end_pending() -> None:
    """Kill the probes started ahead that nobody asked for, and remove their folders."""
    with _probing:
        for started in _pending.values():
            if not isinstance(started, str):
                started[0].kill()
                _finish(*started)
        _pending.clear()


def _base(folder: str | os.PathLike[str] | None) -> str:
    import tempfile

    return os.fspath(folder or tempfile.gettempdir())


def _start(base: str) -> tuple[subprocess.Popen[str], str] | str:
    """The probe's child, started, and its scratch folder; or why it could not start."""
    import tempfile

    try:
        scratch = tempfile.mkdtemp(prefix="liveforge-probe-", dir=base)
    except OSError as exc:
        return f"the copy-on-write probe could not make a folder in {base}: {exc.strerror}"
    try:
        child = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _PROBE, __file__, scratch],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except OSError as exc:
        _remove_probe(scratch)
        return f"the copy-on-write probe could not run: {exc}"
    return child, scratch


def _finish(child: subprocess.Popen[str], scratch: str) -> str | None:
    """The probe's answer, once its child ended (killed after 30 seconds)."""
    try:
        stdout, stderr = child.communicate(timeout=30)
    except subprocess.SubprocessError as exc:
        child.kill()
        child.communicate()
        return f"the copy-on-write probe could not run: {exc}"
    finally:
        _remove_probe(scratch)
    if child.returncode == 0:
        return None
    lines = (stdout.strip() or stderr.strip() or "no output").splitlines()
    return f"the kernel refused a copy-on-write view (user namespace and overlayfs): {lines[-1]}"


def _remove_probe(scratch: str) -> None:
    view = os.path.join(scratch, "view")
    discard(View("", os.path.join(view, "upper"), os.path.join(view, "work")))
    shutil.rmtree(scratch, ignore_errors=True)
