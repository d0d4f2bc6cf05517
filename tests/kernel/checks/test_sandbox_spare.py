"""The next check is made while the template is idle (`_spare`): it must see the project
as it is when it runs, and nothing of it may outlive the template."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_tree import children
from sandbox_support import in_namespace, namespace_of

from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.checks._sandbox import Sandbox

pytestmark = pytest.mark.skipif(probe()[0] < 6, reason="needs Landlock ABI >= 6")

READ_BACK = (
    "import os\n"
    "(open('pkg/mod.py').read(), os.path.exists('pkg/new.py'),"
    " os.path.exists('pkg/old.py'), os.readlink('/proc/self/ns/pid'))"
)


def waiting_check(template: int, wait: float = 10.0) -> int:
    """The pid of the check the template made ahead (its relay's pid 1's child), once it
    exists."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for relay in children(template):
            for init in children(relay):
                if checks := children(init):
                    return checks[0]
        time.sleep(0.01)  # polled: the spare is made after the previous run returned
    raise AssertionError("the template made no check ahead of the next run")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("before = 1\n")
    (tmp_path / "pkg" / "old.py").write_text("gone = True\n")
    return tmp_path


@pytest.fixture
def sandbox(project: Path) -> Iterator[Sandbox]:
    with Sandbox(project) as box:
        yield box


def test_a_check_made_ahead_sees_files_persisted_after_it_was_made(
    project: Path, sandbox: Sandbox
) -> None:
    first = sandbox.verify("1")
    assert first.ok and first.boundary is not None
    assert first.boundary.project == "copy-on-write", first.boundary
    assert sandbox.template_pid is not None
    made_ahead = os.readlink(f"/proc/{waiting_check(sandbox.template_pid)}/ns/pid")

    (project / "pkg" / "mod.py").write_text("after = 2\n")
    (project / "pkg" / "new.py").write_text("")
    (project / "pkg" / "old.py").unlink()
    result = sandbox.verify(READ_BACK)

    assert result.ok, result.summary()
    assert result.value_repr == repr(("after = 2\n", True, False, made_ahead))
    assert result.boundary is not None and result.boundary.project == "copy-on-write"
    assert result.boundary.processes == "pid namespace"


def test_a_check_made_ahead_dies_with_its_template(sandbox: Sandbox) -> None:
    assert sandbox.verify("1").ok
    assert sandbox.template_pid is not None
    namespace = namespace_of(waiting_check(sandbox.template_pid))
    os.kill(sandbox.template_pid, signal.SIGKILL)
    assert in_namespace(namespace) == []
    again = sandbox.verify("6 * 7")  # a new template, and a new check made ahead
    assert (again.status, again.value_repr) == ("passed", "42")
