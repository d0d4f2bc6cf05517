"""A scripted session on a fixture project, end to end over the fake provider: inspect,
view, patch, verify, run the tests, persist — and the files on disk at the end."""

from __future__ import annotations

import subprocess
import sys

import pytest
from agent_support import dedent, make_agent, of_type, run_turn

from liveforge.declarations.agent import AgentSettings
from liveforge.declarations.session import Session
from liveforge.testing import reply

EXACT = dedent('''
    def area(radius: float) -> float:
        """Area of a circle."""
        import math
        return math.pi * radius * radius
    ''')
CHECK = "from {pkg}.geometry import area\nassert abs(area(1.0) - 3.14159) < 0.001\narea(2.0)"


@pytest.fixture
def agent_on(project, fake):
    root, _ = project
    agents = []

    def make(**kwargs):
        agent = make_agent(root, fake, **kwargs)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.runtime.close()


def test_inspect_view_patch_verify_test_persist_writes_the_fixed_file(project, fake, agent_on):
    """The whole working method in one turn; the file on disk ends up fixed and importable,
    and the transcript records the change as persisted."""
    root, pkg = project
    fake.add(
        reply.tool_call("inspect_module", {"path": pkg, "depth": 2}),
        reply.tool_call("view_source", {"path": f"{pkg}.geometry.area"}),
        reply.tool_call("patch", {"path": f"{pkg}.geometry.area", "source": EXACT}),
        reply.tool_call("verify", {"code": CHECK.format(pkg=pkg)}),
        reply.tool_call("run_tests", {"args": ["tests", "-q"]}),
        reply.tool_call("persist", {}),
        reply.text("area() now uses math.pi; verified, tested and persisted."),
    )
    agent = agent_on()
    events = run_turn(agent, "area() is inaccurate; fix it properly")
    finished = of_type(events, "tool_finished")
    assert [f.name for f in finished] == [
        "inspect_module",
        "view_source",
        "patch",
        "verify",
        "run_tests",
        "persist",
    ]
    assert not [f for f in finished if f.is_error], [f.summary for f in finished]
    patch = of_type(events, "patch_applied")[0]
    assert "+    return math.pi * radius * radius" in patch.diff
    checks = of_type(events, "verification")
    assert [(c.kind, c.ok) for c in checks] == [("snippet", True), ("tests", True)]
    assert events[-1].reason == "answer"
    written = (root / pkg / "geometry.py").read_text()
    assert "return math.pi * radius * radius" in written and "def perimeter" in written
    fresh = subprocess.run(
        [sys.executable, "-c", f"import {pkg}.geometry as g; print(g.area(1.0))"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert fresh.stdout.strip() == "3.141592653589793"
    assert agent.session.unpersisted() == []
    assert Session.open(root, agent.session.id).unpersisted() == []


def test_persisting_a_self_patch_is_refused_when_liveforge_tests_fail(
    project, fake, agent_on, tmp_path
):
    """With a self-patch unpersisted, persist first runs liveforge's own suite (here a
    configured small one) in the sandbox with the overlay; a failure refuses the write."""
    suite = tmp_path / "self_suite"
    suite.mkdir()
    (suite / "test_self.py").write_text(
        "from liveforge.impls.compaction import cut_text\n\n"
        "def test_marker_is_kept():\n    assert 'cut' in cut_text('x' * 500, 100)\n"
    )
    target = "liveforge.impls.compaction.cut_text"
    broken = "def cut_text(text, limit, what='tool result'):\n    return text[:limit]\n"
    fake.add(
        reply.tool_call("patch", {"path": target, "source": broken}),
        reply.tool_call("persist", {"modules": ["liveforge.impls.compaction"]}),
        reply.text("refused, fine"),
    )
    agent = agent_on(settings=AgentSettings(self_tests=(str(suite), "-q")))
    before = open(sys.modules["liveforge.impls.compaction"].__file__).read()
    try:
        events = run_turn(agent, "change your truncation and keep it")
    finally:
        agent.runtime.rollback_to(None)
    persist = next(f for f in of_type(events, "tool_finished") if f.name == "persist")
    assert persist.is_error and "own test suite fails" in persist.summary
    run = of_type(events, "verification")[0]
    assert run.kind == "tests" and not run.ok
    assert open(sys.modules["liveforge.impls.compaction"].__file__).read() == before


def test_a_passing_self_suite_lets_the_persist_through_to_the_runtime(fake, agent_on, tmp_path):
    """When liveforge's suite passes with the overlay, the persist itself runs (here the
    runtime then refuses a file outside the project root, so nothing is written)."""
    suite = tmp_path / "self_suite"
    suite.mkdir()
    (suite / "test_self.py").write_text("def test_ok():\n    assert True\n")
    target = "liveforge.impls.compaction.cut_text"
    kept = dedent('''
        def cut_text(text, limit, what="tool result"):
            """Same behaviour, new docstring."""
            return text if len(text) <= limit else text[:limit] + " [cut]"
        ''')
    fake.add(
        reply.tool_call("patch", {"path": target, "source": kept}),
        reply.tool_call("persist", {"modules": ["liveforge.impls.compaction"]}),
        reply.text("ok"),
    )
    agent = agent_on(settings=AgentSettings(self_tests=(str(suite), "-q")))
    try:
        events = run_turn(agent, "keep your change")
    finally:
        agent.runtime.rollback_to(None)
    assert of_type(events, "verification")[0].ok
    persist = next(f for f in of_type(events, "tool_finished") if f.name == "persist")
    assert persist.is_error and "outside the project root" in persist.summary


def test_persist_inside_execute_is_gated_by_the_self_tests_too(fake, agent_on, tmp_path):
    """rt.persist() called from execute cannot skip liveforge's own suite."""
    suite = tmp_path / "self_suite"
    suite.mkdir()
    (suite / "test_self.py").write_text("def test_no():\n    assert False\n")
    target = "liveforge.impls.compaction.cut_text"
    kept = "def cut_text(text, limit, what='tool result'):\n    return text\n"
    code = "rt.persist(['liveforge.impls.compaction'], force=True)"
    fake.add(
        reply.tool_call("patch", {"path": target, "source": kept}),
        reply.tool_call("execute", {"code": code}),
        reply.text("ok"),
    )
    agent = agent_on(settings=AgentSettings(self_tests=(str(suite), "-q")))
    before = open(sys.modules["liveforge.impls.compaction"].__file__).read()
    try:
        events = run_turn(agent, "keep it by any means")
    finally:
        agent.runtime.rollback_to(None)
    executed = next(f for f in of_type(events, "tool_finished") if f.name == "execute")
    assert "self_test_guard" in executed.summary
    assert open(sys.modules["liveforge.impls.compaction"].__file__).read() == before
