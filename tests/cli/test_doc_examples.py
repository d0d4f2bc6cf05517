"""Every code block of README.md and docs/*.md is run or checked, so an example cannot go
stale: a block that fails, shows output it does not print, or that no rule covers fails here.

A block's language says what is done with it, and so does an HTML comment right before it,
``<!-- example: WORD; WORD ... -->`` (invisible on the built site):

- ``python``: run in a fresh interpreter, in the folder of its example (blocks of ``>>>``
  lines as a doctest: each shown result is compared);
- ``bash``: each line run in that folder as a child process that must exit 0 (``liveforge
  ...`` as ``python -m liveforge ...``), except the lines NOT_RUN names: those need a model
  key, the network or a person, and each is reported as a skipped test saying why. A line
  shown again (same words, same setup, no output compared) runs once, where it is first
  shown (the docs pages before README.md); the repeat is reported as skipped, naming where;
- ``toml``: loaded as a project's configuration; ``json``: parsed (an ``mcpServers`` object
  read as ``.mcp.json`` is); ``markdown``: read as a skill;
- ``ipython`` and text blocks (no language) are not run: each is reported as skipped, with why.

Each block starts an example of its own, in a fresh empty folder, unless a word says otherwise:

- ``setup NAME``: the example starts in a folder the setup NAME in SETUPS prepares;
- ``continue``: the block continues the page's previous example (its folder, its namespace);
- ``file PATH``: the block is that file of the example: written there, not run by itself (a
  Python file is compiled), for the blocks after it to use;
- ``output``: the block is what the example printed since the previous ``output`` block
  (a ``bash`` line's stdout and stderr, a Python block's stdout); it continues the example;
- ``not run: REASON``: the block is not run, and is reported as skipped with REASON.

Shown output (``output`` blocks, doctests) is compared as doctest does with ``ELLIPSIS`` and
``NORMALIZE_WHITESPACE``: ``...`` matches anything, and a run of whitespace, line breaks
included, matches any other, so a long line may be wrapped on the page.
"""

from __future__ import annotations

import doctest
import json
import re
import select
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cli_support import FIX, cli_env
from markdown_it import MarkdownIt

from liveforge.demo import copy_sample

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
"""The pages, the manual before the landing page (see `repeats`)."""
CHILD = Path(__file__).with_name("doc_child.py")
TIMEOUT = 300
"""Seconds a block or a command line may take."""

NOT_RUN = {
    "liveforge chat": "talks with a model: needs a model key",
    "liveforge run": "asks a model: needs a model key",
    "liveforge history": "reads a session that `chat` or `run` left: needs a model key",
    "liveforge diff": "reads a session that `chat` or `run` left: needs a model key",
    "liveforge watch": "runs a program until it is stopped",
    "liveforge serve": "a server: runs until it is stopped",
    "liveforge acp": "an editor's agent: speaks ACP on stdin/stdout until the editor leaves",
    "liveforge mcp": "liveforge's MCP server: serves stdin/stdout until the client leaves",
    "liveforge mcp serve": "liveforge's MCP server: serves stdin/stdout until the client leaves",
    "export": "sets a model key for the commands after it",
    "python3": "makes a virtualenv and installs into it from the package index (CI runs "
    "these lines as written: .ci/run)",
    "pip": "installs from the package index",
    "ollama": "needs Ollama and the network",
}
"""Command lines that are not run, by their command (`liveforge` and its sub-command, else
the first word), and why."""

NOT_RUN_LANGUAGES = {
    "": "a diagram or sample lines, not code",
    "ipython": "IPython magics, one a line, not one session: tests/test_ipython.py runs each",
}


@dataclass(frozen=True)
class Block:
    """A fenced code block of a page, with the words of the `example:` comment before it."""

    page: Path
    line: int
    """The line of its opening fence, from 1."""
    language: str
    text: str
    marks: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The page's path in the repository."""
        page = self.page
        return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name

    @property
    def where(self) -> str:
        return f"{self.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's fenced code blocks, in order. An `example:` comment must come right before
    one, and code is fenced (an indented block, which no rule would see, is refused)."""
    found, marks = [], {}
    for token in MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")):
        line = f"{page.name}:{token.map[0] + 1 if token.map else '?'}"
        assert token.type != "code_block", f"{line}: indented code; fence it with ```"
        mark = re.match(r"<!-- example: (.*) -->", token.content)
        if token.type == "fence" and token.map:
            found.append(Block(page, token.map[0] + 1, token.info.strip(), token.content, marks))
            marks = {}
        else:
            assert not marks, f"{line}: an `example:` comment must come right before a block"
            if token.type == "html_block" and mark:
                marks = dict(_word(word.strip()) for word in mark[1].split(";"))
    return found


def _word(word: str) -> tuple[str, str]:
    name, _, value = word.partition(": " if word.startswith("not run") else " ")
    assert name in ("setup", "continue", "file", "output", "not run"), f"unknown word {word!r}"
    return name, value


def examples(page: Path) -> list[list[Block]]:
    """The page's blocks grouped into examples: a block starts one unless it continues one."""
    grouped: list[list[Block]] = []
    for block in blocks(page):
        if "continue" in block.marks or "output" in block.marks:
            assert grouped, f"{block.where}: continues an example, but none came before"
            grouped[-1].append(block)
        else:
            grouped.append([block])
    return grouped


@dataclass(frozen=True)
class Command:
    """A line of a shell block: its words (assignments before them taken out), those
    assignments, and the key NOT_RUN knows it by (`liveforge` and its sub-command, else the
    first word)."""

    where: str
    """page:line+offset, the offset from 1 within the block."""
    words: list[str]
    env: dict[str, str]
    key: str


def commands(block: Block) -> list[Command]:
    """The command lines of a shell block."""
    found = []
    for offset, line in enumerate(block.text.splitlines(), start=1):
        words = shlex.split(line, comments=True)
        env = {}
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if words:
            found.append(Command(f"{block.where}+{offset}", words, env, _key(words)))
    return found


def _key(words: list[str]) -> str:
    if words[0] != "liveforge":
        return words[0]
    command, rest = ["liveforge"], iter(words[1:])
    for word in rest:
        if word == "--project":
            next(rest)
        elif not word.startswith("-"):
            command.append(word)
            if word not in ("mcp", "memory"):  # these two have commands of their own
                break
    return " ".join(command[:3])


def not_run(block: Block) -> str | None:
    """Why a whole block is not run, or None."""
    if "not run" in block.marks:
        return block.marks["not run"]
    if {"file", "output"} & block.marks.keys():
        return None
    return NOT_RUN_LANGUAGES.get(block.language)


def command_not_run(command: Command) -> str | None:
    """Why a command line is not run, or None."""
    return NOT_RUN.get(command.key) or REPEATS.get(command.where)


def _shell(block: Block) -> bool:
    return block.language == "bash" and not not_run(block) and "file" not in block.marks


def repeats(pages: list[Path]) -> dict[str, str]:
    """A command line shown again (the same words, in an example of the same setup that
    compares no output) runs once, where it is first shown: "page:line+offset" of each
    repeat, and where it runs."""
    first: dict[tuple[object, ...], tuple[int, str]] = {}
    found = {}
    for number, example in enumerate(e for page in pages for e in examples(page)):
        if any("output" in block.marks for block in example):
            continue
        setup = example[0].marks.get("setup", "empty")
        for command in (c for block in example if _shell(block) for c in commands(block)):
            if command.key not in NOT_RUN:
                shown = (setup, *command.words, *sorted(command.env.items()))
                runs = first.setdefault(shown, (number, command.where))
                if runs[0] != number:
                    found[command.where] = f"the same line runs at {runs[1]}"
    return found


def _runs_something(block: Block) -> bool:
    if not _shell(block):
        return not not_run(block)
    return any(not command_not_run(command) for command in commands(block))


def not_run_items(pages: list[Path]) -> list[Any]:
    """Each block and command line of `pages` that is not run, as a test that says why."""
    items = []
    for block in (b for page in pages for b in blocks(page)):
        if reason := not_run(block):
            what = f"{block.where} {block.language or 'text'}"
            items.append(pytest.param(f"{what}: {reason}", id=what))
        elif _shell(block):
            for command in commands(block):
                if why := command_not_run(command):
                    what = " ".join(command.words[:3])
                    reason = f"{command.where} `{what}`: {why}"
                    items.append(pytest.param(reason, id=f"{command.where} {what}"))
    return items


def runnable(pages: list[Path]) -> list[Any]:
    """The examples of `pages` that run something, each as a test."""
    return [
        pytest.param(example, id=example[0].where)
        for example in (e for page in pages for e in examples(page))
        if any(map(_runs_something, example))
    ]


# --- setups: what an example's folder holds before its first block --------------------------


def _empty(folder: Path) -> str:
    """An empty folder (the default)."""
    folder.mkdir(parents=True)
    return ""


def _demo(folder: Path) -> str:
    """A copy of the demo's sample project (the `pricing` package with its bug, its tests),
    and `fix.py` holding the corrected `pricing.cart.Line.subtotal`."""
    copy_sample(folder)  # as `liveforge demo` copies it
    (folder / "fix.py").write_text(FIX)
    return ""


def _venv_package(folder: Path) -> str:
    """A project whose `.venv` has the package `extpkg` installed (`extpkg.f` returns 1), on
    `sys.path`; `rt` a Runtime on the project and `source` a new `extpkg.f`."""
    site = folder / ".venv" / "lib" / "python3.12" / "site-packages"
    (site / "extpkg").mkdir(parents=True)
    (folder / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "extpkg" / "__init__.py").write_text("def f():\n    return 1\n")
    return (
        f"import sys\nsys.path.insert(0, {str(site)!r})\nimport extpkg, liveforge\n"
        "rt = liveforge.Runtime(project_root='.')\nsource = 'def f():\\n    return 2\\n'\n"
    )


REPEATS = repeats(PAGES)

SETUPS: dict[str, tuple[str, Callable[[Path], str]]] = {
    "empty": ("project", _empty),
    "demo": ("shop", _demo),
    "venv-package": ("proj", _venv_package),
}
"""Setup name: the example's folder name, and what prepares it (its Python prelude returned:
run, unseen, before the example's first Python block)."""


# --- running an example ----------------------------------------------------------------------


class ExampleRun:
    """One example being run: its folder, its Python child (started at its first Python
    block), and what it printed since the last `output` block."""

    def __init__(self, tmp: Path, setup: str) -> None:
        assert setup in SETUPS, f"no setup {setup!r}; the setups are {', '.join(SETUPS)}"
        name, prepare = SETUPS[setup]
        self.folder = tmp / name
        self.prelude = prepare(self.folder)
        (tmp / "config").mkdir(parents=True)
        (tmp / "tmp").mkdir()
        # no user settings (skills, MCP servers) from outside; temporary folders in tmp
        config = str(tmp / "config")
        self.env = cli_env(LIVEFORGE_CONFIG_HOME=config, XDG_CONFIG_HOME=config)
        self.env["TMPDIR"] = str(tmp / "tmp")
        self.printed = ""
        self.child: subprocess.Popen[str] | None = None

    def run(self, block: Block) -> None:
        """Do with `block` what its marks and language say."""
        if "file" in block.marks:
            self._write(block)
        elif "output" in block.marks:
            self._compare(block)
        else:
            check = CHECKS.get(block.language)
            assert check, f"{block.where}: no rule for a {block.language!r} block (see CHECKS)"
            check(self, block)

    def python(self, block: Block) -> None:
        if self.child is None:
            self.child = subprocess.Popen(
                [sys.executable, str(CHILD)],
                cwd=self.folder,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            if self.prelude:
                self._ask({"code": self.prelude, "page": "<setup>", "line": 1, "doctest": False})
        doctest_ = block.text.lstrip().startswith(">>>")
        reply = self._ask(
            {
                "code": block.text,
                "page": block.name,
                "path": str(block.page),
                "line": block.line + 1,
                "doctest": doctest_,
            }
        )
        assert reply["error"] is None, f"{block.where} failed:\n{reply['error']}"
        self.printed += reply["stdout"]

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.child and self.child.stdin and self.child.stdout
        self.child.stdin.write(json.dumps(request) + "\n")
        self.child.stdin.flush()
        if not select.select([self.child.stdout], [], [], TIMEOUT)[0]:
            self.child.kill()
            raise AssertionError(f"{request['page']}:{request['line']}: no end in {TIMEOUT} s")
        answer = self.child.stdout.readline()
        assert answer, f"the Python child of {request['page']} died (exit {self.child.wait()})"
        reply: dict[str, Any] = json.loads(answer)
        assert request["page"] != "<setup>" or reply["error"] is None, reply["error"]
        return reply

    def shell(self, block: Block) -> None:
        for command in commands(block):
            if command_not_run(command):
                continue
            line = shlex.join(command.words)
            assert command.key.startswith("liveforge"), (
                f"{command.where}: no rule for `{line}`: add its command to NOT_RUN with the "
                "reason it cannot run here, or make it a `liveforge` line"
            )
            result = subprocess.run(
                [sys.executable, "-m", "liveforge", *command.words[1:]],
                cwd=self.folder,
                env={**self.env, **command.env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=TIMEOUT,
            )
            assert result.returncode == 0, (
                f"{command.where}: `{line}` exited {result.returncode}:\n{result.stdout}"
            )
            self.printed += result.stdout

    def _write(self, block: Block) -> None:
        path = self.folder / block.marks["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text, encoding="utf-8")
        if block.language == "python":
            compile(block.text, block.where, "exec")

    def _compare(self, block: Block) -> None:
        checker, flags = doctest.OutputChecker(), doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        if not checker.check_output(block.text, self.printed, flags):
            shown = doctest.Example("", block.text)
            difference = checker.output_difference(shown, self.printed, flags)
            raise AssertionError(f"{block.where}: the output shown is not what ran:\n{difference}")
        self.printed = ""

    def close(self) -> None:
        """End the Python child: its stdin closed, then killed if it does not leave."""
        if self.child:
            assert self.child.stdin
            self.child.stdin.close()
            try:
                self.child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
                raise


def _toml(run: ExampleRun, block: Block) -> None:
    """A configuration example loads as the project's, every key known."""
    from liveforge.config import load_config

    tomllib.loads(block.text)
    (run.folder / "pyproject.toml").write_text("[project]\nname = 'x'\n" + block.text)
    load_config(run.folder, env={})


def _json(run: ExampleRun, block: Block) -> None:
    """A JSON example parses; its `mcpServers` are all read as `.mcp.json`'s would be."""
    from liveforge.impls.mcp_config import McpConfig, parse_servers

    data = json.loads(block.text)
    if "mcpServers" in data:
        config = McpConfig()
        parse_servers(data["mcpServers"], None, config, origin=block.where)
        assert config.problems == [], config.problems


def _skill(run: ExampleRun, block: Block) -> None:
    """A Markdown example is a skill file liveforge reads."""
    from liveforge.impls.skills import parse_skill

    skill = parse_skill(block.text, run.folder / "skill.md", "project")
    assert skill.description


CHECKS: dict[str, Callable[[ExampleRun, Block], None]] = {
    "python": ExampleRun.python,
    "py": ExampleRun.python,
    "bash": ExampleRun.shell,
    "toml": _toml,
    "json": _json,
    "markdown": _skill,
}
"""What is done with a block, by its language."""


def run_example(example: list[Block], tmp: Path) -> None:
    """Run an example's blocks in order; AssertionError naming the block that failed."""
    run = ExampleRun(tmp, example[0].marks.get("setup", "empty"))
    try:
        for block in example:
            if not not_run(block):
                run.run(block)
    finally:
        run.close()


@pytest.mark.parametrize("example", runnable(PAGES))
def test_example(example: list[Block], tmp_path: Path):
    """The example's blocks run as the docs show them, and print what they show."""
    run_example(example, tmp_path)


@pytest.mark.parametrize("reason", not_run_items(PAGES))
def test_not_run(reason: str):
    """A block or command line the docs show but this machine cannot run, and why."""
    pytest.skip(reason)


@pytest.mark.parametrize(
    ("markdown", "error"),
    [
        ("```python\nraise ValueError('stale')\n```\n", "ValueError: stale"),
        (
            "```python\nx = 1\n```\n\n<!-- example: continue -->\n```python\nassert x == 2\n```\n",
            "assert x == 2",
        ),
        ("```python\n>>> 1 + 1\n3\n```\n", "Expected: 3 Got: 2"),
        (
            "```python\nprint('new')\n```\n\n<!-- example: output -->\n```\nold\n```\n",
            "the output shown is not what ran",
        ),
        ("```bash\nliveforge view pricing.nope\n```\n", "exited 3"),
        ("```bash\nmake docs\n```\n", "no rule for `make docs`"),
        ("```toml\n[tool.liveforge]\nmax_tokns = 5\n```\n", "max_tokns"),
        ("```rust\nfn main() {}\n```\n", "no rule for a 'rust' block"),
        ("<!-- example: file x.py -->\n```python\ndef f(:\n```\n", "invalid syntax"),
        ('```json\n{"mcpServers": {"t": {"type": "http"}}}\n```\n', "MCP server 't'"),
        ("```markdown\n# Release\n```\n", "no front matter"),
        ("<!-- example: setup nope -->\n```bash\nliveforge runs\n```\n", "no setup 'nope'"),
        ("<!-- example: setup demo -->\n\nText.\n\n```bash\nliveforge runs\n```\n", "right before"),
        ("Text:\n\n    import nothing_here\n", "indented code"),
    ],
    ids=[
        *("raises", "continued", "doctest", "output", "exit-status", "no-rule", "toml", "lang"),
        *("file", "mcp-json", "skill", "setup", "mark-astray", "indented"),
    ],
)
def test_a_stale_example_fails(markdown: str, error: str, tmp_path: Path):
    """A block that fails, prints or returns other than shown, or that no rule covers, fails
    its example, and the failure says why."""
    page = tmp_path / "page.md"
    page.write_text(markdown)
    with pytest.raises(Exception) as failure:  # the message says which
        (example,) = examples(page)
        run_example(example, tmp_path / "run")
    assert " ".join(error.split()) in " ".join(str(failure.value).split())


def test_what_is_not_run_is_reported_with_why(tmp_path: Path):
    """A block marked `not run`, and a line of a command that needs a model key, are not run
    but reported, each with its reason; the rest of their block still runs."""
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- example: not run: needs a GPU -->\n```python\nraise SystemExit(1)\n```\n\n"
        "```bash\nliveforge chat --model openai:gpt-4o\nliveforge find nothing\n```\n"
    )
    assert [item.values[0] for item in not_run_items([page])] == [
        "page.md:2 python: needs a GPU",
        "page.md:6+1 `liveforge chat --model`: talks with a model: needs a model key",
    ]
    assert [item.id for item in runnable([page])] == ["page.md:6"]
