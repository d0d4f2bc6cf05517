"""Bad input at the command line ends in a message that says what to do and a documented
exit code, never a Python traceback; global options go before or after the command."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest
from cli_support import cli_env, run_cli

from liveforge.__main__ import build_parser, subcommands


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
    (
        "unknown-option-of-a-command",
        ["view", "--strat", "3", "pkg.ok.f"],
        2,
        "liveforge view: error: unrecognized arguments: --strat pkg.ok.f; did you mean "
        "'--start' (for '--strat')?",
    ),
    (
        "unknown-option-of-a-nested-command",
        ["--project", ".", "memory", "list", "--limt", "3"],
        2,
        "usage: liveforge memory list [-h] [--limit LIMIT]",
    ),
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


GLOBAL_CASES = {
    # option words -> (command words, exit code, text that shows the option took effect)
    ("--project", "{root}", "--json"): (["view", "pkg.ok.f"], 0, '"project": "{root}"'),
    # with --debug the project's exception propagates: Python prints it and exits with 1
    ("--debug",): (["verify", "--patch", "pkg.broken.f=fix.py"], 1, "boom at import"),
    ("--this-python",): (["inspect", "pkg.ok"], 0, "pkg.ok"),
    ("--version",): (["runs"], 0, "liveforge "),
    ("--json", "--project", "{root}"): (["memory", "list"], 0, '"action": "list"'),
}
"""Each global option with a command that shows its effect; the last one is nested."""


def _own_environment(root: Path) -> None:
    """Give the project an environment without liveforge: commands stop with the advice to
    install it there, unless --this-python."""
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /nowhere\n")
    python.write_text("#!/bin/sh\nexit 1\n")  # `import liveforge` fails there
    python.chmod(0o755)


@pytest.mark.parametrize("side", ["before", "after"])
@pytest.mark.parametrize("option", list(GLOBAL_CASES), ids=lambda o: o[0])
def test_global_options_before_or_after_the_command(
    tmp_path: Path, option: tuple[str, ...], side: str
):
    """Every global option works on either side of the command (a nested one too)."""
    root = _project(tmp_path / "proj")
    if "--this-python" in option:
        _own_environment(root)
    command, code, shown = GLOBAL_CASES[option]
    words = [w.replace("{root}", str(root)) for w in option]
    cwd = tmp_path if "--project" in option else root
    args = [*words, *command] if side == "before" else [*command, *words]
    result = run_cli(*args, cwd=cwd, timeout=60)
    assert result.returncode == code, result.stderr
    assert shown.replace("{root}", str(root)) in result.stdout + result.stderr
    assert "unrecognized arguments" not in result.stderr
    assert ("Traceback" in result.stderr) == ("--debug" in option)


def test_every_global_option_is_covered_and_accepted_by_every_command():
    """The cases above cover each top-level option, and every command's parser, nested
    ones included, takes each of them."""
    parser = build_parser()
    top = {f for a in parser._actions for f in a.option_strings if f.startswith("--")} - {"--help"}
    assert top == {w for option in GLOBAL_CASES for w in option if w.startswith("--")}
    for command in subcommands(parser):
        missing = top - set(command._option_string_actions)
        assert not missing, (command.prog, missing)
    # serve takes several projects after the command; the one before it counts too
    assert parser.parse_args(["--project", "a", "serve"]).project == "a"
    assert parser.parse_args(["serve", "--project", "a", "--project", "b"]).project == ["a", "b"]


def test_every_command_has_examples_in_its_help():
    """Each sub-command's --help, nested ones (`memory list`) included, ends with runnable
    examples naming the command."""
    commands = subcommands(build_parser())
    assert "liveforge memory list" in [command.prog for command in commands]
    for command in commands:
        text = command.format_help()
        assert "examples:\n" in text, command.prog
        assert f"{command.prog} " in text.split("examples:")[1], command.prog


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_code_for_each_shell(tmp_path: Path, shell: str):
    """`liveforge completion SHELL` prints code that hooks liveforge into that shell."""
    result = run_cli("completion", shell, cwd=tmp_path)
    assert result.returncode == 0 and "liveforge" in result.stdout, result.stderr


def test_bash_completion_code_completes_a_command_in_a_real_bash(tmp_path: Path):
    """In an interactive bash that evaluated `liveforge completion bash`, Tab after
    `liveforge veri` completes the command: running the line is `liveforge verify`."""
    env = cli_env(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        PS1="$ ",
        TERM="dumb",
    )
    bash = pexpect.spawn(
        "bash",
        ["--norc", "--noprofile", "-i"],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=60,
    )
    bash.sendline('eval "$(liveforge completion bash)" && complete -p liveforge')
    bash.expect(r"complete .*-F _python_argcomplete.* liveforge")
    bash.send("liveforge veri\t")
    bash.expect_exact("fy ")  # the rest of the command, and the space after it
    bash.send("\r")
    bash.expect_exact("nothing to verify: give the code (liveforge verify CODE)")
    bash.sendline("exit")
    bash.expect(pexpect.EOF)


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
