"""`liveforge watch`: a real child program, real file saves applied to it while it runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest
from cli_support import cli_env
from saves import save_like_an_editor

APP = """\
import sys, time
from shop.calc import price, Basket

handlers = {"price": price}          # a reference taken before any save
basket = Basket()                    # an instance created before any save
print("ready", flush=True)
last = None
for line in sys.stdin:
    now = (handlers["price"](10), basket.total())
    print("values", *now, flush=True)
    if line.strip() == "quit":
        break
sys.exit(7)
"""

CALC = """\
def price(n):
    return n * 1


class Basket:
    def total(self):
        return 100
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "calc.py").write_text(CALC)
    (root / "app.py").write_text(APP)
    return root


def _spawn(root: Path, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", "watch", "--project", str(root), *args],
        cwd=str(root),
        env=cli_env(),
        encoding="utf-8",
        timeout=60,
    )
    child.expect_exact("watching")
    child.expect_exact("ready")
    return child


def _values(child: pexpect.spawn) -> str:
    child.sendline("")
    child.expect(r"values (\S+) (\S+)\r\n")
    return f"{child.match.group(1)} {child.match.group(2)}"


def _quit(child: pexpect.spawn) -> int:
    """End the program; its exit status."""
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_saves_apply_live_keep_identity_and_survive_bad_saves(tmp_path: Path):
    """A save changes the running program (old references too); a syntax error or a module
    that raises keeps the old code and says so; the next good save applies; the program's
    own exit code is the command's."""
    root = _project(tmp_path)
    calc = root / "shop" / "calc.py"
    child = _spawn(root, "--", "app.py")
    assert _values(child) == "10 100"

    save_like_an_editor(calc, CALC.replace("n * 1", "n * 2").replace("return 100", "return 200"))
    child.expect(r"applied shop\.calc: ~price,Basket\.total \(c\d+\)")
    assert _values(child) == "20 200"

    save_like_an_editor(calc, CALC.replace("def price(n):", "def price(n:"))
    child.expect_exact("shop/calc.py:1: SyntaxError:")
    child.expect_exact("the old code keeps running")
    save_like_an_editor(calc, CALC + "\nraise RuntimeError('half-written')\n")
    child.expect_exact("kept old code: shop.calc: not applied")
    child.expect_exact("half-written")
    assert _values(child) == "20 200"

    save_like_an_editor(calc, CALC.replace("n * 1", "n * 3"))
    child.expect(r"applied shop\.calc: ~price,Basket\.total")
    assert _values(child) == "30 100"
    assert _quit(child) == 7


def test_module_program_with_verify_and_test_on_save(tmp_path: Path):
    """`-- -m module`; after each applied save the --verify snippet and --test run in the
    sandbox and their outcome is one line each."""
    root = _project(tmp_path)
    (root / "shop" / "__main__.py").write_text(APP.replace("sys.exit(7)", ""))
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "from shop.calc import price\n\ndef test_price():\n    assert price(1) == 1\n"
    )
    child = _spawn(
        root,
        "--verify",
        "from shop.calc import price; assert price(2) == 2, price(2)",
        "--test",
        "-q tests",
        "--",
        "-m",
        "shop",
    )
    save_like_an_editor(root / "shop" / "calc.py", CALC.replace("n * 1", "n * 5"))
    child.expect_exact("applied shop.calc: ~price")
    # pexpect matches with re.DOTALL: [^\n] keeps each pattern on its own line
    child.expect(r"verify c\d+: failed in [^\n]*AssertionError: 10")
    child.expect(r"test c\d+: 1 failed in [^\n]*\(details: liveforge runs ")
    child.expect_exact("FAIL tests/test_calc.py::test_price: assert 5 == 1")
    assert _values(child) == "50 100"
    assert _quit(child) == 0


def _prompt(root: Path) -> pexpect.spawn:
    """`liveforge watch` without a program, at its first prompt."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", "watch", "--project", str(root)],
        cwd=str(root),
        env=cli_env(),
        encoding="utf-8",
        timeout=60,
    )
    child.expect_exact(">>> ")
    return child


def test_without_a_program_a_prompt_follows_saves(tmp_path: Path):
    """`liveforge watch` alone is a Python prompt whose imported modules follow saves."""
    root = _project(tmp_path)
    child = _prompt(root)
    child.sendline("from shop.calc import price; price(10)")
    child.expect_exact("10\r\n")
    save_like_an_editor(root / "shop" / "calc.py", CALC.replace("n * 1", "n * 4"))
    child.expect_exact("applied shop.calc: ~price")
    child.sendline("price(10)")
    child.expect_exact("40\r\n")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize("line", ["exit()", "quit()", "import sys; sys.exit(0)"])
def test_exit_typed_at_the_prompt_leaves_the_watch_cleanly(tmp_path: Path, line: str):
    """exit() or sys.exit(0) at the prompt ends the watch with status 0, like Ctrl-D."""
    root = _project(tmp_path)
    child = _prompt(root)
    child.sendline(line)
    child.expect(pexpect.EOF)
    left = child.before
    child.close()
    assert child.exitstatus == 0, left
    assert "error" not in left and "sys.exit" not in left.replace(line, "")


SERVE = """\
import sys


def answer(n):
    return n * 1


print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "quit":
        break
    print("values", answer(10), "x", flush=True)
"""


def test_a_changed_serving_loop_is_not_rerun_and_watching_goes_on(tmp_path: Path):
    """One save changes a function and the program's own top-level loop: the function
    applies, the loop is named as not re-run (with what runs it), and it does not take over
    the watcher — the next save still applies."""
    root = tmp_path / "proj"
    root.mkdir()
    app = root / "serve.py"
    app.write_text(SERVE)
    child = _spawn(root, "--", "serve.py")
    assert _values(child) == "10 x"

    save_like_an_editor(app, SERVE.replace("n * 1", "n * 2").replace('"x"', '"y"'))
    child.expect(r"applied __main__: ~answer \(c\d+\)  \d+ ms; not re-run \(a loop or a call at ")
    child.expect_exact("top level): line 9 `for line in sys.stdin:` — restart the program")
    assert _values(child) == "20 x"  # the running loop is the old one; it calls the new code

    save_like_an_editor(app, SERVE.replace("n * 1", "n * 3").replace('"x"', '"y"'))
    child.expect(r"applied __main__: ~answer \(c\d+\)")
    assert _values(child) == "30 x"
    assert _quit(child) == 0


def test_rerun_runs_changed_top_level_calls_again(tmp_path: Path):
    """With --rerun, a changed top-level call runs again, as jurigged does."""
    root = tmp_path / "proj"
    root.mkdir()
    app = root / "serve.py"
    app.write_text(SERVE)
    child = _spawn(root, "--rerun", "--", "serve.py")
    save_like_an_editor(
        app, SERVE.replace('print("ready", flush=True)', 'print("ready again", flush=True)')
    )
    child.expect_exact("ready again")
    child.expect(r"applied __main__: statements re-run \(c\d+\)")
    assert _quit(child) == 0


TAGGED = (
    CALC
    + """

TAGS = []


def tag(name):
    TAGS.append(name)


tag("a")
"""
)
"""The shop's calc with a registry filled by a top-level call (a call is not re-run)."""


def test_a_save_the_running_program_does_not_follow_is_reported_divergent(tmp_path: Path):
    """A save whose changed top-level call is not re-run leaves the program unlike a fresh
    import of the file: --verify sees both and a DIVERGENT line names the two values; the
    definitions of the save still applied."""
    root = _project(tmp_path)
    (root / "shop" / "calc.py").write_text(TAGGED)
    child = _spawn(root, "--verify", "import shop.calc; shop.calc.TAGS", "--", "app.py")
    assert _values(child) == "10 100"
    save_like_an_editor(
        root / "shop" / "calc.py", TAGGED.replace('"a"', '"b"').replace("n * 1", "n * 2")
    )
    child.expect(r"applied shop\.calc: ~price \((c\d+)\)  \d+ ms; not re-run")
    change = child.match.group(1)
    child.expect(r"verify c\d+: divergent in [^\n]*the live process and a fresh import disagree")
    child.expect_exact(
        f"DIVERGENT ({change}): the running program gives ['a'], a fresh import of the saved "
        "files ['b']"
    )
    child.expect_exact("restart the program to run the files as saved")
    assert _values(child) == "20 100"
    assert _quit(child) == 7


def test_a_module_known_under_two_names_is_applied_once(tmp_path: Path):
    """`__main__` is also `__mp_main__` once multiprocessing ran: a save applies (and a bad
    one is reported) once, not once per name."""
    import types

    from liveforge.watch import modules_of

    path = tmp_path / "prog.py"
    path.write_text("")
    module = types.ModuleType("prog_alias_test")
    module.__file__ = str(path)
    sys.modules["prog_alias_test"] = sys.modules["prog_alias_test_mp"] = module
    try:
        assert modules_of(path) == ["prog_alias_test"]
    finally:
        del sys.modules["prog_alias_test"], sys.modules["prog_alias_test_mp"]


def test_what_counts_as_a_statement_that_runs_code():
    """Loops and calls outside definitions run code; definitions, imports, assignments and
    blocks that only define do not."""
    import ast

    from liveforge.watch import runs_code

    def first(text: str) -> ast.stmt:
        return ast.parse(text).body[0]

    for text in (
        "main()",
        "while True:\n    serve()",
        "for x in y:\n    pass",
        'if __name__ == "__main__":\n    main()',
        "with lock:\n    go()",
    ):
        assert runs_code(first(text)), text
    for text in (
        "x = load()",
        "import os",
        "raise RuntimeError('half-written')",
        "def f():\n    while True:\n        g()",
        "try:\n    import ujson as json\nexcept ImportError:\n    import json",
        "if TYPE_CHECKING:\n    from a import B",
        '"""docstring"""',
    ):
        assert not runs_code(first(text)), text
