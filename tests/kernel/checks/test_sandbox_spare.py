"""The next check is made while the template is idle (`_spare`): it must see the project
as it is when it runs, and nothing of it may outlive the template."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_tree import descendants
from sandbox_support import NAMESPACE, in_namespace, namespace_of

from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.checks._sandbox import Sandbox

pytestmark = pytest.mark.skipif(probe()[0] < 6, reason="needs Landlock ABI >= 6")

READ_BACK = (
    "import os\n"
    "(open('pkg/mod.py').read(), os.path.exists('pkg/new.py'),"
    " os.path.exists('pkg/old.py'), os.readlink('/proc/self/ns/pid'))"
)


def waiting_check(template: int, last: str, wait: float = 10.0) -> int:
    """The pid of the check the template made ahead (pid 2 of its pid namespace: the
    template's child in a host, its relay's pid 1's child in namespaces of its own), once it
    exists; `last` names the pid namespace of the run before it (as `NAMESPACE` gives it),
    whose processes may still be ending (its result came before its exit)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for check in descendants(template):
            with contextlib.suppress(OSError, AssertionError, ValueError):
                status = Path(f"/proc/{check}/status").read_text()
                nspid = next(line for line in status.splitlines() if line.startswith("NSpid:"))
                # by its pid 1, not its number: the kernel may give an ended namespace's
                # number to the next one (see `NAMESPACE`)
                if nspid.split()[-1] == "2" and namespace_of(check) != last:
                    return check
        time.sleep(0.01)  # polled: the spare is made after the previous run returned
    raise AssertionError("the template made no check ahead of the next run")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("before = 1\n")
    (tmp_path / "pkg" / "old.py").write_text("gone = True\n")
    return tmp_path


@pytest.fixture(params=["in a host", "in namespaces of its own"])
def sandbox(project: Path, request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """Checks made ahead in namespaces the host maker made (where this process may fork
    into them: root), and in namespaces of their own (elsewhere)."""
    with Sandbox(project) as box:
        if request.param == "in a host" and not box.checks_join_hosts:
            pytest.skip("checks join hosts only where the front end has CAP_SYS_ADMIN")
        box.checks_join_hosts = request.param == "in a host"
        yield box


def test_a_check_made_ahead_sees_files_persisted_after_it_was_made(
    project: Path, sandbox: Sandbox
) -> None:
    first = sandbox.verify(NAMESPACE)
    assert first.ok and first.boundary is not None and first.value_repr is not None
    assert first.boundary.project == "copy-on-write", first.boundary
    assert sandbox.template_pid is not None
    check = waiting_check(sandbox.template_pid, eval(first.value_repr))
    made_ahead = os.readlink(f"/proc/{check}/ns/pid")

    (project / "pkg" / "mod.py").write_text("after = 2\n")
    (project / "pkg" / "new.py").write_text("")
    (project / "pkg" / "old.py").unlink()
    result = sandbox.verify(READ_BACK)

    assert result.ok, result.summary()
    assert result.value_repr == repr(("after = 2\n", True, False, made_ahead))
    assert result.boundary is not None and result.boundary.project == "copy-on-write"
    assert result.boundary.processes == "pid namespace"


def test_a_check_made_ahead_dies_with_its_template(sandbox: Sandbox) -> None:
    first = sandbox.verify(NAMESPACE)
    assert first.ok and first.value_repr is not None and sandbox.template_pid is not None
    namespace = namespace_of(waiting_check(sandbox.template_pid, eval(first.value_repr)))
    os.kill(sandbox.template_pid, signal.SIGKILL)
    assert in_namespace(namespace) == []
    again = sandbox.verify("6 * 7")  # a new template, and a new check made ahead
    assert (again.status, again.value_repr) == ("passed", "42")
