"""The README's and the docs' user-facing promises hold: set-up lines, commands, exit codes,
what the configuration examples set (test_doc_examples.py runs every example)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from liveforge.__main__ import build_parser
from liveforge.cli import ExitCode

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MANUAL = README + "".join(
    "\n\n" + page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").glob("*.md"))
)
"""The README and the documentation pages under docs/: every claim in them is held here."""


def _blocks(language: str, text: str = MANUAL) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_first_two_lines_install_and_run_the_demo_then_the_tests():
    """Line 1 installs and runs `liveforge demo`; line 2 installs dev and runs pytest -n 2."""
    first, second = _blocks("bash", README)[0].splitlines()[:2]
    assert first.endswith("pip install -e . && liveforge demo")
    assert second.endswith('pip install -e ".[dev]" && python -m pytest -n 2')


def _command_lines() -> list[list[str]]:
    lines = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["liveforge"]:
                lines.append(words[1:])
    return lines


@pytest.mark.parametrize("words", _command_lines(), ids=lambda w: " ".join(w[:2]))
def test_every_documented_command_line_parses(words: list[str]):
    """Each `liveforge ...` line in the tour is accepted by the real argument parser."""
    args = build_parser().parse_args(words)
    assert callable(args.handler)


def test_exit_code_table_matches_the_code():
    """The docs' exit-code table lists exactly the codes the command line uses."""
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", MANUAL, flags=re.M)}
    assert documented == {int(code) for code in ExitCode}


def test_configuration_reference_is_a_valid_configuration(tmp_path: Path):
    """The docs' reference and gateway [tool.liveforge] examples set what they say."""
    from liveforge.config import load_config

    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    (main,) = [block for block in _blocks("toml", reference) if "[tool.liveforge]" in block]
    (gateway,) = [block for block in _blocks("toml") if "[tool.liveforge.gateway]" in block]
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + main)
    config = load_config(tmp_path, env={})
    assert config.agent is not None and config.agent.max_steps == 40
    assert config.context is not None and "work-vllm" in config.providers
    settings = config.sandbox.settings(tmp_path)
    assert settings.cpu_seconds == 60 and not settings.network
    assert settings.readable == (str((tmp_path / "../shared-data").resolve()),)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n" + gateway)
    served = load_config(tmp_path, env={})
    assert served.gateway is not None and served.gateway.telegram is not None
    assert [entry.name for entry in served.schedule] == ["nightly-tests"]


def test_the_configuration_example_is_valid(tmp_path: Path):
    """The docs' `[tool.liveforge]` example loads as a pyproject.toml, every key known."""
    from liveforge.config import load_config

    example = next(b for b in _blocks("toml") if "[tool.liveforge.tools]" in b)
    (tmp_path / "pyproject.toml").write_text(example)
    config = load_config(tmp_path, env={})
    assert config.tools.deny == ["group:shell"] and config.tools.memory.embeddings is not None


def _paragraphs() -> list[str]:
    """The prose paragraphs of the README and the docs (code blocks and mkdocstrings
    directives left out)."""
    prose = re.sub(r"```.*?```", "", MANUAL, flags=re.S)
    prose = re.sub(r"^::: .*(\n    .*)*", "", prose, flags=re.M)  # mkdocstrings directives
    return [p.strip() for p in re.split(r"\n\s*\n", prose) if p.strip()]


def test_every_paragraph_starts_a_sentence():
    """No paragraph begins mid-sentence, as a stray copy of part of another one would."""
    start = re.compile(r"[A-Z`*#|\-\[<\d]|liveforge\b")
    assert [p[:60] for p in _paragraphs() if not start.match(p)] == []


def test_the_files_liveforge_keeps_are_described_once():
    """One paragraph says which files liveforge keeps in a project, and which instruction
    files the agent reads."""
    assert len([p for p in _paragraphs() if ".liveforge/chat_history" in p]) == 1
    assert MANUAL.count("LIVEFORGE.md` (else") == 1
