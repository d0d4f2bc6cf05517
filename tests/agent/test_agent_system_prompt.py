"""The system prompt is built from parts: identity and method, tools, project, instructions,
skills."""

from __future__ import annotations

from agent_support import make_agent

from liveforge.declarations.prompt import SystemPrompt
from liveforge.declarations.toolbox import Toolbox
from liveforge.kernel import Runtime


def _prompt(root) -> SystemPrompt:
    rt = Runtime(project_root=root)
    return SystemPrompt(runtime=rt, toolbox=Toolbox(runtime=rt, packages=[], limit=8000))


def test_parts_in_order_with_method_tools_project_and_instructions(project):
    """Identity states the working method; every tool is listed; the project's packages
    appear with their modules; LIVEFORGE.md is included."""
    root, pkg = project
    prompt = _prompt(root)
    parts = {p.name: p for p in prompt.parts()}
    assert list(parts) == ["identity", "tools", "project", "instructions", "skills"]
    method = parts["identity"].text
    assert (
        method.index("Inspect")
        < method.index("Patch")
        < method.index("Verify")
        < method.index("Test")
        < method.index("Persist")
    )
    assert "- view_source: " in parts["tools"].text and "- persist: " in parts["tools"].text
    assert f"{pkg}/" in parts["project"].text and "area(radius: float)" in parts["project"].text
    assert "Prefer math.pi" in parts["instructions"].text
    assert prompt.render().count("# ") >= 3


def test_agents_md_is_used_when_there_is_no_liveforge_md(project):
    """AGENTS.md is the fallback instruction file; with neither, the part is left out."""
    root, _ = project
    (root / "LIVEFORGE.md").unlink()
    (root / "AGENTS.md").write_text("Run the tests before persisting.\n")
    prompt = _prompt(root)
    assert "Run the tests before persisting." in prompt.render()
    (root / "AGENTS.md").unlink()
    assert "instructions" not in [p.name for p in prompt.parts()]


def test_project_part_follows_changes_to_the_program(project, fake):
    """After a patch adds a function, the next prompt's overview shows it."""
    root, pkg = project
    agent = make_agent(root, fake)
    assert "diameter" not in agent.system_prompt()
    agent.runtime.patch(
        f"{pkg}.geometry.diameter", "def diameter(radius: float) -> float:\n    return 2 * radius\n"
    )
    assert "diameter(radius: float)" in agent.system_prompt()
