"""`liveforge watch`: a real child program, real file saves applied to it while it runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
from cli_support import cli_env

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


def _save(path: Path, text: str) -> None:
    """Write like an editor: a new file renamed over the old one."""
    tmp = path.with_suffix(".tmp~")
    tmp.write_text(text)
    os.replace(tmp, path)


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

    _save(calc, CALC.replace("n * 1", "n * 2").replace("return 100", "return 200"))
    child.expect(r"applied shop\.calc: ~price,Basket\.total \(c\d+\)")
    assert _values(child) == "20 200"

    _save(calc, CALC.replace("def price(n):", "def price(n:"))
    child.expect_exact("shop/calc.py:1: SyntaxError:")
    child.expect_exact("the old code keeps running")
    _save(calc, CALC + "\nraise RuntimeError('half-written')\n")
    child.expect_exact("kept old code: shop.calc: not applied")
    child.expect_exact("half-written")
    assert _values(child) == "20 200"

    _save(calc, CALC.replace("n * 1", "n * 3"))
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
    _save(root / "shop" / "calc.py", CALC.replace("n * 1", "n * 5"))
    child.expect_exact("applied shop.calc: ~price")
    # pexpect matches with re.DOTALL: [^\n] keeps each pattern on its own line
    child.expect(r"verify: [^\n]*snippet failed[^\n]*AssertionError: 10")
    child.expect(r"test: [^\n]*1 failed")
    assert _values(child) == "50 100"
    assert _quit(child) == 0


def test_without_a_program_a_prompt_follows_saves(tmp_path: Path):
    """`liveforge watch` alone is a Python prompt whose imported modules follow saves."""
    root = _project(tmp_path)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", "watch", "--project", str(root)],
        cwd=str(root),
        env=cli_env(),
        encoding="utf-8",
        timeout=60,
    )
    child.expect_exact(">>> ")
    child.sendline("from shop.calc import price; price(10)")
    child.expect_exact("10\r\n")
    _save(root / "shop" / "calc.py", CALC.replace("n * 1", "n * 4"))
    child.expect_exact("applied shop.calc: ~price")
    child.sendline("price(10)")
    child.expect_exact("40\r\n")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
