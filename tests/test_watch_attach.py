"""`liveforge.watch.start()` from inside a running program: a real child program that
attaches to its own project, real file saves applied to it while it runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
from saves import save_like_an_editor

PROGRAM = """\
import sys

from shop.calc import price          # imported before the watcher starts
from liveforge.watch import start

watcher = start(".")
from shop.late import bonus          # imported after it started

print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "quit":
        break
    print("values", price(10), bonus(), flush=True)
watcher.stop()
print("stopped", flush=True)
"""

CALC = "def price(n):\n    return n * 1\n"
LATE = "def bonus():\n    return 'none'\n"


def _values(child: pexpect.spawn) -> str:
    child.sendline("")
    child.expect(r"values (\S+) (\S+)\r\n")
    return f"{child.match.group(1)} {child.match.group(2)}"


def test_a_program_that_starts_the_watcher_follows_its_saves(tmp_path: Path):
    """`start(".")` in the program applies saves of modules it imported before and after
    the call, says each on stderr, and `stop()` ends the watching."""
    root = tmp_path / "proj"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "calc.py").write_text(CALC)
    (root / "shop" / "late.py").write_text(LATE)
    (root / "app.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVEFORGE_")}
    child = pexpect.spawn(
        sys.executable, ["app.py"], cwd=str(root), env=env, encoding="utf-8", timeout=60
    )
    child.expect_exact("ready")
    assert _values(child) == "10 none"

    save_like_an_editor(root / "shop" / "calc.py", CALC.replace("n * 1", "n * 2"))
    child.expect(r"\[liveforge\] applied shop\.calc: ~price \(c\d+\)")
    save_like_an_editor(root / "shop" / "late.py", LATE.replace("'none'", "'ten'"))
    child.expect(r"\[liveforge\] applied shop\.late: ~bonus \(c\d+\)")
    assert _values(child) == "20 ten"

    save_like_an_editor(root / "shop" / "calc.py", CALC.replace("n * 1", "n *"))
    child.expect_exact("[liveforge] kept old code: shop/calc.py:2: SyntaxError:")
    assert _values(child) == "20 ten"

    child.sendline("quit")
    child.expect_exact("stopped")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
