"""Two runtimes (two processes) persisting one file: a lock and a re-check, no lost update."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import liveforge.impls  # noqa: F401  (registers the Toolbox bodies)
from liveforge import Runtime
from liveforge.declarations.permissions import Policy
from liveforge.declarations.toolbox import Toolbox

TRIALS = 20

WORKER = textwrap.dedent(
    """
    import sys
    from liveforge import Runtime
    from liveforge.kernel.errors import PersistConflict

    root, me = sys.argv[1], sys.argv[2]
    sys.path.insert(0, root)
    rt = Runtime(project_root=root)
    import shared
    rt.verify("pass")  # start the sandbox template once
    for line in sys.stdin:
        trial = line.strip()
        if not trial:
            break
        rt.reload("shared", force=True)
        rt.patch("shared.value", f"def value():\\n    return {me!r} + {trial!r}\\n")
        assert rt.verify("import shared").ok
        print("ready", flush=True)
        sys.stdin.readline()  # go
        try:
            rt.persist(["shared"])
            print("ok", flush=True)
        except PersistConflict:
            print("conflict", flush=True)
    persisted = [w for w in rt.foreign_writes() if w.action == "persisted"]
    print("news", len(persisted), flush=True)
    rt.close()
    """
)


def _worker(root: Path, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(root), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _say(worker: subprocess.Popen[str], line: str) -> None:
    assert worker.stdin is not None
    worker.stdin.write(line + "\n")
    worker.stdin.flush()


def _hear(worker: subprocess.Popen[str]) -> str:
    assert worker.stdout is not None
    return worker.stdout.readline().strip()


def test_twenty_trials_of_two_runtimes_persisting_one_file_lose_no_update(tmp_path: Path):
    """In every trial both runtimes load the same version, then persist at once: exactly
    one write lands, the other is refused as a conflict, and the file holds the winner's.
    Each process is told of every persist the other one made."""
    (tmp_path / "shared.py").write_text("def value():\n    return 'start'\n")
    workers = {name: _worker(tmp_path, name) for name in ("a", "b")}
    outcomes = []
    try:
        for trial in range(TRIALS):
            for worker in workers.values():
                _say(worker, str(trial))
            assert [_hear(w) for w in workers.values()] == ["ready", "ready"]
            for worker in workers.values():
                _say(worker, "go")
            answers = {name: _hear(w) for name, w in workers.items()}
            winners = [name for name, answer in answers.items() if answer == "ok"]
            on_disk = (tmp_path / "shared.py").read_text()
            outcomes.append((trial, answers, winners, on_disk))
        for worker in workers.values():
            _say(worker, "")
        news = {name: _hear(w) for name, w in workers.items()}
    finally:
        for worker in workers.values():
            worker.communicate(timeout=60)
    lost = [o for o in outcomes if len(o[2]) != 1 or f"{o[2][0]!r} + '{o[0]}'" not in o[3]]
    assert lost == [], lost
    wins = {name: sum(o[2] == [name] for o in outcomes) for name in workers}
    assert news == {"a": f"news {wins['b']}", "b": f"news {wins['a']}"}


def test_a_runtime_is_told_of_another_runtimes_persist(tmp_path: Path):
    """The next tool call of a second runtime on the project starts with a note naming the
    module the first one persisted, once."""
    (tmp_path / "told.py").write_text("def f():\n    return 1\n")
    sys.path.insert(0, str(tmp_path))
    first, second = Runtime(project_root=tmp_path), Runtime(project_root=tmp_path)
    try:
        import told  # noqa: F401

        box = Toolbox(runtime=second, packages=[], limit=8000, policy=Policy(mode="full-auto"))
        first.patch("told.f", "def f():\n    return 2\n")
        first.persist(force=True)
        text = box.call("history", {}).text
        again = box.call("history", {}).text
        own = Toolbox(runtime=first, packages=[], limit=8000, policy=Policy(mode="full-auto"))
        mine = own.call("history", {}).text
    finally:
        first.close()
        second.close()
        sys.path.remove(str(tmp_path))
        sys.modules.pop("told", None)
    assert text.startswith("[another liveforge runtime (pid ") and "persisted: told" in text
    assert "another liveforge" not in again and "another liveforge" not in mine
