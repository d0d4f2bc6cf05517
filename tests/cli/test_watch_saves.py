"""`liveforge watch` says every save, never applies a half-written file, and never waits for
its checks: a real child program, real files written the ways editors write them."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pexpect
from cli_support import cli_env
from saves import save_like_an_editor

APP = """\
import sys
from shop.calc import price

print("ready", flush=True)
for line in sys.stdin:
    print("values", price(10), flush=True)
"""

CALC = """\
RATE = 1
TABLE = {"a": 1}


def helper():
    return 1


def price(n):
    return n * RATE
"""


def _project(tmp_path: Path, calc: str = CALC) -> Path:
    root = tmp_path / "proj"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "calc.py").write_text(calc)
    (root / "app.py").write_text(APP)
    return root


def _spawn(root: Path, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", "watch", "--project", str(root), *args, "--", "app.py"],
        cwd=str(root),
        env=cli_env(),
        encoding="utf-8",
        timeout=60,
    )
    child.expect_exact("ready")
    return child


def _line(child: pexpect.spawn) -> str:
    """The next line the watch says about a save (check lines are indented and skipped)."""
    while True:
        child.expect(r"\[liveforge\] ([^\r\n]*)\r\n")
        line = child.match.group(1)
        if not line.startswith(" "):
            return line


def _value(child: pexpect.spawn) -> str:
    child.sendline("")
    child.expect(r"values (\S+)\r\n")
    return child.match.group(1)


def _quit(child: pexpect.spawn) -> None:
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()


def test_every_save_gets_one_line_refusals_included(tmp_path: Path):
    """A refusal identical to the last one is said again for a new save, and names the good
    edits it did not apply either; a syntax error then the good file back says memory and
    file agree again; saving the file unchanged says so; deleting it keeps the module."""
    root = _project(tmp_path)
    calc = root / "shop" / "calc.py"
    child = _spawn(root)
    raising = CALC + "\nraise RuntimeError('not yet')\n"

    save_like_an_editor(calc, raising.replace("n * RATE", "n * 2"))
    first = _line(child)
    assert first.startswith("kept old code: shop.calc: not applied (PatchExecutionError"), first
    assert "RuntimeError: not yet" in first and "(~price) applied" in first
    save_like_an_editor(calc, raising.replace("n * RATE", "n * 2").replace("return 1", "return 2"))
    second = _line(child)
    assert second.startswith("kept old code: shop.calc: not applied"), second
    assert "none of the save's edits (~helper,price) applied" in second
    assert "the old code keeps running" in second
    assert _value(child) == "10"

    save_like_an_editor(calc, CALC.replace("def price(n):", "def price(n:"))
    assert _line(child).startswith("kept old code: shop/calc.py:9: SyntaxError:")
    save_like_an_editor(calc, CALC)
    back = _line(child)
    assert back.startswith("in sync: shop.calc: memory and file agree again"), back
    save_like_an_editor(calc, CALC)
    assert _line(child) == "unchanged: shop.calc: the file matches the running code"

    save_like_an_editor(calc, CALC.replace("n * RATE", "n * 3"))
    assert _line(child).startswith("applied shop.calc: ~price (c")
    assert _value(child) == "30"

    calc.unlink()
    assert _line(child) == (
        "kept old code: shop/calc.py: cannot be read (deleted, or not text); shop.calc keeps "
        "running as it was"
    )
    assert _value(child) == "30"
    save_like_an_editor(calc, CALC.replace("n * RATE", "n * 3"))
    assert _line(child).startswith("in sync: shop.calc: memory and file agree again")
    _quit(child)


def test_truncate_then_write_never_applies_the_empty_module(tmp_path: Path):
    """An editor that truncates the file and writes it 100 ms later gets one applied line
    for what it wrote, never the empty module (whose removal would leave `from shop.calc
    import price` holding the old code); a file saved empty is held until its next save."""
    root = _project(tmp_path)
    calc = root / "shop" / "calc.py"
    child = _spawn(root)
    for n in (2, 3):
        with open(calc, "r+") as handle:
            handle.truncate(0)
        time.sleep(0.1)
        calc.write_text(CALC.replace("n * RATE", f"n * {n}"))
        assert _line(child).startswith("applied shop.calc: ~price (c")
        assert _value(child) == f"{n}0"  # the app's own `price` follows: identity kept

    save_like_an_editor(calc, "")
    held = _line(child)
    assert held.startswith("held: shop/calc.py: it looks half-written (the file is empty"), held
    assert "RATE, TABLE, helper, price" in held and "Save it again to apply it" in held
    assert _value(child) == "30"
    save_like_an_editor(calc, "# emptied on purpose\n")  # the next save applies, whatever it holds
    assert _line(child).startswith("applied shop.calc: -RATE,TABLE,helper,price (c")
    _quit(child)


def test_checks_run_behind_saves_and_a_newer_save_stops_them(tmp_path: Path):
    """With --test running a suite that cannot end until this test lets it, the next save
    is applied and said at once and stops the old check; --verify shows its value; a failed
    run names the failing test and its assertion."""
    root = _project(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "import time\nfrom pathlib import Path\nfrom shop.calc import price\n\n\n"
        "def test_price():\n"
        "    while not Path('gate').exists():\n"
        "        time.sleep(0.02)\n"
        "    assert price(1) == 2, 'price(1) should be 2'\n"
    )
    calc = root / "shop" / "calc.py"
    child = _spawn(root, "--verify", "from shop.calc import price; price(1)", "--test", "-q tests")
    save_like_an_editor(calc, CALC.replace("n * RATE", "n * 3"))
    child.expect(r"applied shop\.calc: ~price \((c\d+)\)")
    first = child.match.group(1)
    child.expect_exact(f"verify {first}: passed in ")
    child.expect_exact(", value 3\r\n")
    runs = root / "sandbox_runs"
    while len([p for p in runs.iterdir() if p.is_dir()]) < 2:  # the test run has begun
        time.sleep(0.05)

    save_like_an_editor(calc, CALC.replace("n * RATE", "n * 5"))
    child.expect(r"\[liveforge\] ([^\r\n]+)\r\n")
    assert child.match.group(1).startswith("applied shop.calc: ~price (c"), child.match.group(1)
    child.expect_exact(f"checks of {first} stopped: superseded by the save c")
    (root / "gate").write_text("")
    child.expect(r"verify c\d+: passed in [^\n]*, value 5\r\n")
    child.expect(r"test c\d+: 1 failed in [^\n]*\(details: liveforge runs \S+\)\r\n")
    child.expect_exact("FAIL tests/test_calc.py::test_price: AssertionError: price(1) should be 2")
    assert _value(child) == "50"
    _quit(child)


LOOP = """\
import dataclasses
import threading
import time

TICKS = []


@dataclasses.dataclass
class Item:
    name: str
    qty: int

    def label(self):
        return self.name


def background():
    while True:
        TICKS.append(1)
        time.sleep(0.01)


def price(n):
    return n * 1


threading.Thread(target=background, name="ticker", daemon=True).start()
"""


def test_an_applied_line_names_fields_signatures_and_old_code_still_running(tmp_path: Path):
    """Removing a dataclass field in a save that also edits a method says the fields
    changed; a changed signature is named; a thread looping in an updated function is named
    as still running its old code."""
    root = _project(tmp_path, LOOP)
    child = _spawn(root)
    saved = (
        LOOP.replace("    qty: int\n", "")
        .replace("return self.name", "return self.name.upper()")
        .replace("time.sleep(0.01)", "time.sleep(0.02)")
        .replace("def price(n):\n    return n * 1", "def price(n, rate=2):\n    return n * rate")
    )
    save_like_an_editor(root / "shop" / "calc.py", saved)
    line = _line(child)
    assert line.startswith("applied shop.calc: ~Item.label,background,price (c"), line
    assert "Item fields (name, qty) -> (name): Item.__init__ changed, calls made for the " in line
    assert "signature price(n) -> price(n, rate=2)" in line
    assert "still running its old code: background (thread 'ticker')" in line
    assert _value(child) == "20"
    _quit(child)
