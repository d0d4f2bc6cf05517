"""Skills: found in project, user and bundled folders with that precedence, listed briefly
in the system prompt, brought in whole by load_skill; instruction files as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.declarations.skills import SkillLibrary, SkillNotFound
from liveforge.testing import reply


def _skill(folder: Path, name: str, description: str, body: str, *, nested: bool = False) -> Path:
    path = folder / name / "SKILL.md" if nested else folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's config folder, moved into the test's temporary folder."""
    monkeypatch.delenv("LIVEFORGE_CONFIG_HOME", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "liveforge" / "skills"


def test_project_wins_over_user_which_wins_over_bundled(tmp_path: Path, user_home: Path) -> None:
    """One name in all three places resolves to the project's; each level keeps its own."""
    root, bundled = tmp_path / "proj", tmp_path / "bundled"
    project = root / ".liveforge" / "skills"
    mine = _skill(project, "deploy", "project deploy", "P", nested=True)
    theirs = _skill(user_home, "deploy", "user deploy", "U")
    _skill(bundled, "deploy", "bundled deploy", "B")
    _skill(user_home, "review", "user review", "UR")
    _skill(bundled, "review", "bundled review", "BR")
    _skill(bundled, "bench", "bundled bench", "BB")
    library = SkillLibrary(root, bundled_dir=bundled)
    found = {s.name: (s.source, s.description) for s in library.skills()}
    assert found == {
        "bench": ("bundled", "bundled bench"),
        "deploy": ("project", "project deploy"),
        "review": ("user", "user review"),
    }
    deploy = library.load("deploy")
    assert (deploy.path, deploy.body) == (mine, "P")
    assert deploy.hides == (theirs, bundled / "deploy.md")


def test_front_matter_subset_and_bad_files_are_reported(tmp_path: Path, user_home: Path) -> None:
    """Quotes, comments, `>` blocks and when-to-use are read; a broken file is named with
    what to fix, and loading it or an unknown name says which names exist."""
    folder = tmp_path / ".liveforge" / "skills"
    folder.mkdir(parents=True)
    (folder / "migrate.md").write_text(
        "---\n# a comment\nname: 'migrate'\ndescription: >\n  Move a module\n  safely\n"
        'when-to-use: "a module is renamed"\n---\n\nSteps.\n'
    )
    (folder / "broken.md").write_text("no front matter here\n")
    (folder / "nodesc.md").write_text("---\nname: nodesc\n---\nbody\n")
    (folder / "README.md").write_text("Notes about this folder, not a skill.\n")
    library = SkillLibrary(tmp_path, bundled_dir=tmp_path / "none")
    (migrate,) = library.skills()
    assert migrate.description == "Move a module safely"
    assert migrate.when_to_use == "a module is renamed"
    assert migrate.body == "Steps."
    problems = "\n".join(library.problems())
    assert "broken.md: no front matter" in problems and "nodesc.md: no `description:`" in problems
    with pytest.raises(SkillNotFound, match=r"'broken' cannot be used: .*no front matter"):
        library.load("broken")
    with pytest.raises(SkillNotFound, match=r"no skill named 'nope'; the skills are: migrate"):
        library.load("nope")


def test_prompt_lists_skills_briefly_and_load_skill_brings_one_in(project, fake, user_home):
    """The system prompt has one line per skill (bundled ones too), not their text; the
    model's load_skill call returns the whole text; an unknown name is a tool error."""
    root, _ = project
    body = "1. Tag the release.\n2. Push the tag."
    _skill(root / ".liveforge" / "skills", "release", "Cut a release", body)
    fake.add(
        reply.tool_call("load_skill", {"name": "release"}).tool_call("load_skill", {"name": "x"}),
        reply.text("Released."),
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "cut a release")
    system = fake.requests[0].body["system"]
    assert "# Skills" in system and "- release: Cut a release" in system
    assert "- improve-liveforge: " in system and "Tag the release" not in system
    finished = of_type(events, "tool_finished")
    assert [(f.name, f.is_error) for f in finished] == [("load_skill", False), ("load_skill", True)]
    results = [b for b in fake.requests[-1].body["messages"][-1]["content"]]
    assert "Skill release (project: " in results[0]["content"] and body in results[0]["content"]
    assert "the skills are: " in results[1]["content"] and "release" in results[1]["content"]
    agent.runtime.close()


def test_a_new_skill_file_reaches_the_next_prompt(project, fake, user_home):
    """The cached prompt is rebuilt when a skill file appears; CLAUDE.md is read as the
    instruction file when there is no LIVEFORGE.md or AGENTS.md."""
    root, _ = project
    (root / "LIVEFORGE.md").unlink()
    (root / "CLAUDE.md").write_text("Keep functions small.\n")
    agent = make_agent(root, fake)
    first = agent.system_prompt()
    assert "Keep functions small." in first and "- lint:" not in first
    _skill(user_home, "lint", "Run the linters", "ruff check .")
    assert "- lint: Run the linters" in agent.system_prompt()
    agent.runtime.close()


def test_front_matter_that_is_not_yaml_is_reported_with_file_and_line(tmp_path: Path) -> None:
    """`[unclosed` and `{also:` are YAML errors: each file is left out and named in
    problems() with the line at fault, never listed with its text as the description."""
    folder = tmp_path / ".liveforge" / "skills"
    folder.mkdir(parents=True)
    (folder / "list.md").write_text("---\nname: list\ndescription: [unclosed\n---\nbody\n")
    (folder / "map.md").write_text("---\nname: map\n\ndescription: {also:\n---\nbody\n")
    (folder / "good.md").write_text("---\nname: good\ndescription: 'a: b'\n---\nbody\n")
    library = SkillLibrary(tmp_path, bundled_dir=tmp_path / "none")
    assert [(s.name, s.description) for s in library.skills()] == [("good", "a: b")]
    problems = library.problems()
    assert len(problems) == 2
    by_file = {Path(p.split(": ", 1)[0]).name: p for p in problems}
    assert "line 3 of the file: the front matter is not valid YAML" in by_file["list.md"]
    assert "line 4 of the file: the front matter is not valid YAML" in by_file["map.md"]
    assert "[unclosed" not in " ".join(s.description for s in library.skills())
