"""A command imports what it needs: `--help` and `find` leave the agent, the tools'
settings and jedi unloaded; the list of commands in `--help` is the commands' own."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from liveforge.__main__ import COMMANDS, build_parser


def _imported(*args: str, cwd: Path) -> set[str]:
    """The modules `liveforge ARGS` imported (from `python -X importtime`)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "liveforge", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return {line.rpartition("|")[2].strip() for line in result.stderr.splitlines() if "|" in line}


@pytest.mark.parametrize("args", [["--help"], ["find", "subtotal"]], ids=" ".join)
def test_one_shot_commands_leave_the_agent_stack_unloaded(sample: Path, args: list[str]):
    """No agent, provider, tool settings (pydantic) or jedi for `--help` and `find`."""
    imported = _imported(*args, cwd=sample)
    assert "liveforge.kernel.source._roots" in imported or args == ["--help"]  # find ran
    heavy = {"liveforge.impls", "liveforge.agent_setup", "jedi", "pydantic", "httpx", "rich"}
    assert imported & heavy == set()


def test_the_help_lines_listed_are_the_commands_own():
    """`COMMANDS` (what `--help` lists without importing the commands) says what each
    command's module registers, for every built-in command."""
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    registered = {c.dest: c.help for c in action._choices_actions}
    assert registered == {name: help for name, (_, help) in COMMANDS.items()}
