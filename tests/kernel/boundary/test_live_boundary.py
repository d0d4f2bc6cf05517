"""Live checks run inside the check boundary too: the fork of the running program sees the
project copy-on-write, reaches no network and nothing outside its tree, and takes every
process it starts with it; its result says so like a fresh-import check's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from kernel_support import Project
from sandbox_support import NAMESPACE, SETSID_DAEMONS, in_namespace, loopback_listener

from liveforge import Runtime
from liveforge.kernel.boundary._boundary import probe
from liveforge.kernel.checks import _livefork

pytestmark = [
    pytest.mark.skipif(not _livefork.available(), reason="needs os.fork"),
    pytest.mark.skipif(probe()[0] < 6, reason="needs Landlock ABI >= 6"),
]


def test_the_live_check_writes_only_into_its_view_of_the_project(
    project: Project, rt: Runtime, tmp_path_factory: pytest.TempPathFactory
) -> None:
    mod = project.module("def f():\n    return 1\n")
    rt.patch(f"{mod.__name__}.f", "def f():\n    return 2\n")
    source = Path(mod.__file__ or "")
    outside = tmp_path_factory.mktemp("outside") / "notes.txt"
    outside.write_text("keep me\n")
    code = textwrap.dedent(f"""
        from {mod.__name__} import f
        import pathlib

        def write(path, text):
            try:
                pathlib.Path(path).write_text(text)
                return "written"
            except PermissionError:
                return "denied"

        f(), write({str(source)!r}, "broken = True\\n"), write({str(outside)!r}, "changed")
    """)
    result = rt.verify(code)
    live = result.live
    assert live is not None and live.boundary is not None and live.isolation == "landlock"
    project = "written" if live.boundary.project == "copy-on-write" else "denied"
    assert result.ok and result.value_repr == f"(2, {project!r}, 'denied')", result.summary()
    assert source.read_text() == "def f():\n    return 1\n"
    assert outside.read_text() == "keep me\n"
    if live.boundary.project == "copy-on-write":
        assert live.boundary.project_writes == [source.name]
        assert "project copy-on-write" in live.headline()
    assert "isolation: landlock" in live.headline() and "network off" in live.headline()


def test_the_live_check_has_no_network_unless_asked(rt: Runtime) -> None:
    with loopback_listener() as (port, accepted, thread):
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).close()"
        refused = rt.verify(code)
        assert refused.live is not None and refused.live.exc_type == "PermissionError"
        assert not accepted
        allowed = rt.verify(code, network=True, live=True)
        thread.join(10)
    assert allowed.live is not None and allowed.live.ok, allowed.summary()
    assert allowed.live.boundary is not None and allowed.live.boundary.network and accepted


def test_what_a_live_check_starts_dies_with_it(rt: Runtime) -> None:
    """setsid daemons started by the live fork do not outlive it (its own pid namespace)."""
    code = SETSID_DAEMONS + NAMESPACE + "\n"
    result = rt.verify(code)
    live = result.live
    assert live is not None and live.ok and live.boundary is not None, result.summary()
    if live.boundary.processes != "pid namespace":
        pytest.skip(f"no pid namespace here: {live.boundary.project_reason}")
    # The namespace ends as its pid 1 is killed when the check ends: the kernel takes its
    # processes with it asynchronously (in_namespace follows it through its pid 1: once it
    # has ended, its number may already be a new namespace's).
    assert in_namespace(eval(live.value_repr or "''")) == []
