"""Bad input at the command line ends in a message that says what to do and a documented
exit code, never a Python traceback; global options go before or after the command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_support import run_cli

from liveforge.__main__ import build_parser


def _project(root: Path) -> Path:
    """A project with modules that raise or exit on import, and a Latin-1 patch file."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "broken.py").write_text(
        "def f():\n    pass\n\nraise RuntimeError('boom at import')\n"
    )
    (root / "pkg" / "quits.py").write_text("import sys\n\nsys.exit(3)\n")
    for name, first_line in [("raising", "raise RuntimeError('no config')"),
                             ("needsdep", "import nonexistent_dep")]:  # fmt: skip
        (root / name).mkdir()
        (root / name / "__init__.py").write_text("__version__ = '1'\nfrom .impl import *\n")
        impl = f"{first_line}\n\n\ndef add(a, b):\n    return a + b\n"
        (root / name / "impl.py").write_text(impl)
    (root / "pkg" / "ok.py").write_text("def f():\n    return 1\n")
    (root / "fix.py").write_text("def f():\n    return 2\n")
    (root / "latin1.py").write_bytes("def f():\n    return 'café'\n".encode("latin-1"))
    (root / "a_file.txt").write_text("not a folder\n")
    return root


CASES = [
    # (id, arguments, exit code, text the message must contain)
    ("timeout-zero", ["verify", "-c", "1", "--timeout", "0"], 2, "time limit"),
    ("timeout-negative", ["test", "--timeout", "-3"], 2, "above 0"),
    ("timeout-nan", ["verify", "-c", "1", "--timeout", "nan"], 2, "'nan' is not a usable"),
    ("timeout-inf", ["verify", "-c", "1", "--timeout", "inf"], 2, "'inf' is not a usable"),
    ("timeout-word", ["verify", "-c", "1", "--timeout", "soon"], 2, "not a number of seconds"),
    ("patch-not-utf8", ["verify", "--patch", "pkg.ok.f=latin1.py"], 2, "is not UTF-8 text"),
    ("patch-missing-file", ["verify", "--patch", "pkg.ok.f=nope.py"], 2, "does not exist"),
    ("patch-bad-spec", ["verify", "--patch", "pkg.ok.f"], 2, "expects TARGET=FILE"),
    ("demo-onto-a-file", ["demo", "a_file.txt"], 2, "is a file; give the demo"),
    ("demo-onto-a-full-folder", ["demo", "pkg"], 2, "is not empty"),
    (
        "module-raises-on-import",
        ["verify", "--patch", "pkg.broken.f=fix.py"],
        3,
        "RuntimeError: boom at import (at pkg/broken.py:4)",
    ),
    (
        "module-exits-on-import",
        ["verify", "--patch", "pkg.quits.f=fix.py"],
        3,
        "called sys.exit(3) (at pkg/quits.py:3)",
    ),
    (
        "package-raises-on-import",
        ["view", "raising.add"],
        3,
        "importing 'raising' failed: RuntimeError: no config (at raising/impl.py:1). Fix that line",
    ),
    (
        "package-needs-a-missing-dependency",
        ["view", "needsdep.add"],
        3,
        "importing 'needsdep' failed: ModuleNotFoundError: No module named 'nonexistent_dep' "
        "(at needsdep/impl.py:1). Install the package that provides 'nonexistent_dep'",
    ),
    (
        "package-import-error-in-json",
        ["--json", "inspect", "needsdep.add"],
        3,
        "importing 'needsdep' failed",
    ),
    ("unknown-target", ["view", "pkg.ok.nothing"], 3, "was not found"),
    ("runs-unknown-id", ["runs", "nosuch"], 3, "list the runs with `liveforge runs`"),
    (
        "runs-unknown-record",
        ["runs", "20260101-000000-000000-aaaaaa"],
        3,
        "retention); list the runs with `liveforge runs`",
    ),
    ("project-not-a-folder", ["--project", "a_file.txt", "inspect"], 2, "is not a directory"),
    ("json-on-chat", ["--json", "chat"], 2, "has no --json output"),
    ("watch-not-python", ["watch", "--", "a_file.txt"], 2, "is not a .py file"),
    ("watch-missing-script", ["watch", "--", "nosuch.py"], 2, "'nosuch.py' does not exist"),
    ("watch-unknown-module", ["watch", "--", "-m", "no_such_mod"], 2, "no Python module"),
    ("completion-unknown-shell", ["completion", "tcsh"], 2, "invalid choice: 'tcsh'"),
    ("verify-code-twice", ["verify", "1", "-c", "2"], 2, "got the code twice"),
    ("verify-empty-code", ["verify", " "], 2, "the code to verify is empty"),
]


@pytest.mark.parametrize(
    ("args", "code", "text"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_says_what_to_do_without_a_traceback(
    tmp_path: Path, args: list[str], code: int, text: str
):
    """Exit code as documented, the message on stderr, no traceback."""
    root = _project(tmp_path / "proj")
    result = run_cli(*args, cwd=root, timeout=60)
    assert result.returncode == code, result.stderr
    assert text in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_debug_shows_the_traceback_of_project_code(tmp_path: Path):
    """--debug lets the project's own traceback through."""
    root = _project(tmp_path / "proj")
    result = run_cli("--debug", "verify", "--patch", "pkg.broken.f=fix.py", cwd=root)
    assert result.returncode != 0
    assert "Traceback" in result.stderr and "boom at import" in result.stderr


def test_global_options_before_or_after_the_command(tmp_path: Path):
    """--project and --json work on either side of the command, with the same result."""
    root = _project(tmp_path / "proj")
    before = run_cli("--project", str(root), "--json", "view", "pkg.ok.f", cwd=tmp_path)
    after = run_cli("view", "pkg.ok.f", "--project", str(root), "--json", cwd=tmp_path)
    assert before.returncode == after.returncode == 0, before.stderr + after.stderr
    assert before.stdout == after.stdout and '"ok": true' in before.stdout


def test_every_command_has_examples_in_its_help():
    """Each sub-command's --help ends with runnable examples naming the command."""
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    for name, command in sub.choices.items():  # type: ignore[attr-defined]
        text = command.format_help()
        assert "examples:\n" in text and f"liveforge {name}" in text.split("examples:")[1], name


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_code_for_each_shell(tmp_path: Path, shell: str):
    """`liveforge completion SHELL` prints code that hooks liveforge into that shell."""
    result = run_cli("completion", shell, cwd=tmp_path)
    assert result.returncode == 0 and "liveforge" in result.stdout, result.stderr


def test_tab_completion_answers_with_commands_and_their_help(tmp_path: Path):
    """The shell's Tab request (argcomplete protocol) gets the sub-commands with their help."""
    out = tmp_path / "candidates"
    line = "liveforge "
    result = run_cli(
        cwd=tmp_path,
        _ARGCOMPLETE="1",
        _ARGCOMPLETE_SHELL="fish",
        COMP_LINE=line,
        COMP_POINT=str(len(line)),
        _ARGCOMPLETE_STDOUT_FILENAME=str(out),
        _ARGCOMPLETE_IFS="\n",
        _ARGCOMPLETE_DFS="\t",
    )
    assert result.returncode == 0, result.stderr
    candidates = out.read_text().split("\n")
    assert "verify\trun a snippet in the sandbox, with patches applied" in candidates
    assert "watch\trun a program and apply each file save to it live" in candidates
    assert os.path.getsize(out) < 10_000
