"""Where a shell command runs: inside the check boundary (the kernel's launcher,
`liveforge.kernel.boundary._confine`) or, approved, as a terminal would; its environment; the thread
that starts it; and the one line that tells the model what held it in.

Inside the boundary a command reads the system, the interpreter with its libraries, the
project and the user's git configuration; writes the project, a private ``$TMPDIR`` and the
configured ``writable`` paths; has no TCP unless the call or the configuration allows it;
cannot signal processes outside its own tree; gets no secret variables; has data and
file-size limits; and nothing it starts outlives it (``setsid`` escapees included).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.kernel.boundary._boundary import BoundaryPolicy
from liveforge.kernel.boundary._confine import Confinement, confine_argv
from liveforge.kernel.boundary._overlay import View
from liveforge.kernel.boundary._overlay import probe as overlay_probe
from liveforge.kernel.boundary._policy import Readable
from liveforge.kernel.boundary._secrets import without_secrets

if TYPE_CHECKING:
    from liveforge.declarations.shell import Shell

__all__ = ["describe", "launch", "view_unavailable"]

FILE_LIMIT_KB = 1 << 20
"""Largest file a command inside the boundary may write (its output included): 1 GiB."""
GIT_CONFIG = (".gitconfig", ".config/git")
"""The user's git configuration (name, e-mail, aliases): readable, so git works as usual."""
_KILL_GRACE = 1.0  # less than the front end's own grace, so the launcher cleans up first

_readable: dict[Path, Readable] = {}
_spawner: list[tuple[int, concurrent.futures.ThreadPoolExecutor]] = []
_spawner_lock = threading.Lock()


def launch(
    shell: Shell, command: str, cwd: Path, scratch: Path, *, boundary: bool, network: bool
) -> tuple[subprocess.Popen[bytes], dict[str, Any] | None]:
    """Start ``command`` with bash in ``cwd``, output to ``scratch``/output.txt; the process
    and, inside the boundary, what applied (None outside it, or when it did not start)."""
    bash = shutil.which("bash") or "/bin/bash"
    argv, env = [bash, "-c", command], dict(os.environ)
    if not boundary:
        return _in_spawner(argv, cwd, env, scratch / "output.txt", None), None
    temp = scratch / "tmp"
    temp.mkdir(exist_ok=True)
    read, write = os.pipe()
    try:
        confinement = _confinement(shell, temp, network, write, _view_of(shell, scratch))
        argv = confine_argv(confinement, argv)
        env = without_secrets(env)
        env.update(TMPDIR=str(temp), TMP=str(temp), TEMP=str(temp))
        env["XDG_CACHE_HOME"] = str(temp / ".cache")  # ~/.cache is outside the boundary
        popen = _in_spawner(argv, cwd, env, scratch / "output.txt", write)
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as pipe:  # EOF once the command runs (or did not start)
        data = pipe.read()
    return popen, json.loads(data) if data else None


def _view_of(shell: Shell, scratch: Path) -> View | None:
    """A copy-on-write view of the project in ``scratch``, None where views cannot be made
    (`view_unavailable` says why)."""
    if view_unavailable() is not None:
        return None
    return View.beside(Path(shell.runtime.project_root).resolve(), scratch / "view")


def view_unavailable() -> str | None:
    """Why shell commands cannot run on a copy-on-write view here (None: they can)."""
    return overlay_probe()


def _confinement(
    shell: Shell, temp: Path, network: bool, report_fd: int, view: View | None
) -> Confinement:
    root = Path(shell.runtime.project_root).resolve()
    settings = shell.settings
    home = Path.home()
    extra = [*_paths(root, settings.readable), *(str(home / p) for p in GIT_CONFIG)]
    policy = BoundaryPolicy(
        scratch=str(temp),
        readable=(*_readable_for(root)(), *(p for p in extra if os.path.exists(p))),
        writable=(str(root), *_paths(root, settings.writable)),
        network=network,
    )
    return Confinement(
        policy,
        report_fd=report_fd,
        data_mb=settings.memory_mb,
        file_kb=FILE_LIMIT_KB,
        grace=_KILL_GRACE,
        view=view,
    )


def _paths(root: Path, paths: list[str]) -> list[str]:
    return [str((root / p).resolve()) for p in paths]


def _readable_for(root: Path) -> Readable:
    if root not in _readable:
        _readable[root] = Readable(root, ())
    return _readable[root]


def _in_spawner(
    argv: list[str], cwd: Path, env: dict[str, str], out: Path, report_fd: int | None
) -> subprocess.Popen[bytes]:
    """Start the process from one long-lived thread: the launcher stops when the thread
    that started it ends, and tool calls may run in short-lived worker threads."""
    with _spawner_lock:
        if not _spawner or _spawner[0][0] != os.getpid():  # none yet, or a forked copy
            _spawner[:] = [(os.getpid(), concurrent.futures.ThreadPoolExecutor(1, "lf-spawn"))]
        executor = _spawner[0][1]
    return executor.submit(_popen, argv, cwd, env, out, report_fd).result()


def _popen(
    argv: list[str], cwd: Path, env: dict[str, str], out: Path, report_fd: int | None
) -> subprocess.Popen[bytes]:
    with open(out, "wb") as sink:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=() if report_fd is None else (report_fd,),
        )


def describe(boundary: bool, report: dict[str, Any] | None) -> str:
    """What held a command in, in one line for the model and the person."""
    if not boundary:
        return "outside the check boundary: full environment, files and network"
    if report is None:
        return "check boundary (not applied: the command did not start)"
    if report["isolation"] == "none":
        return f"check boundary without isolation ({report.get('reason')}): no secrets, limits"
    network = "network on" if report["network"] else "network off"
    signals = "" if report.get("signals_scoped") else ", signals not scoped"
    view = (report.get("view") or {}).get("state") == "copy-on-write"
    on = ", on a copy-on-write view" if view else ""
    return (
        f"check boundary (landlock): writes only in the project and $TMPDIR, {network}{signals}{on}"
    )
