"""`liveforge apply`: patch, check, and write the files only when every check passed."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
from cli_support import FIX, run_cli

SCHEMA = json.loads((resources.files("liveforge.cli") / "schema.json").read_text())
CHECK = "from pricing.cart import Line; assert Line('a', 100, 10).subtotal() == 900"


def _fix(sample: Path, text: str = FIX) -> str:
    (sample.parent / "fix.py").write_text(text)
    return f"pricing.cart.Line.subtotal={sample.parent / 'fix.py'}"


def _json(result) -> dict:
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def test_passing_tests_write_the_file_and_print_the_diff(sample: Path):
    """The tests pass with the patch: the file holds the fix, the report shows the diff,
    the check and what was written; exit 0."""
    result = run_cli("apply", "--patch", _fix(sample), "--test", "-q", "tests", cwd=sample)
    assert result.returncode == 0, result.stderr
    assert "-        if self.quantity > BULK_QUANTITY:" in result.stdout
    assert "+        if self.quantity >= BULK_QUANTITY:" in result.stdout
    assert "tests: run " in result.stdout and "5 passed" in result.stdout
    assert f"wrote pricing.cart -> {sample.resolve() / 'pricing' / 'cart.py'}" in result.stdout
    assert "if self.quantity >= BULK_QUANTITY:" in (sample / "pricing" / "cart.py").read_text()


def test_a_failing_check_writes_nothing_and_exits_1_with_json(sample: Path):
    """--verify fails: exit 1, the file is byte for byte as it was, the JSON object says
    which check failed and that nothing was written; the tests were not run."""
    before = (sample / "pricing" / "cart.py").read_bytes()
    broken = FIX.replace(">= BULK_QUANTITY", "> BULK_QUANTITY + 1")
    result = run_cli(
        "apply", "--patch", _fix(sample, broken), "--verify", CHECK, "--json", "--test", cwd=sample
    )
    data = _json(result)
    assert result.returncode == 1
    assert (sample / "pricing" / "cart.py").read_bytes() == before
    assert data["ok"] is False and data["written"] == [] and data["dry_run"] is False
    assert data["error"]["exit_code"] == 1
    assert data["error"]["message"] == (
        "nothing written: verify failed; the files are as they were"
    )
    verify, tests = data["checks"]
    assert verify["check"] == "verify" and verify["run"]["ok"] is False
    assert verify["run"]["exc_type"] == "AssertionError"
    assert tests == {"check": "tests", "run": None, "skipped": "verify failed"}
    assert "+        if self.quantity > BULK_QUANTITY + 1:" in data["diff"]


def test_dry_run_checks_and_writes_nothing(sample: Path):
    """--dry-run: the checks pass, the diff is shown, the file is untouched; exit 0."""
    before = (sample / "pricing" / "cart.py").read_bytes()
    result = run_cli("apply", "--patch", _fix(sample), "--verify", CHECK, "--dry-run", cwd=sample)
    assert result.returncode == 0, result.stderr
    assert (sample / "pricing" / "cart.py").read_bytes() == before
    assert "verify: run " in result.stdout and "snippet passed" in result.stdout
    assert result.stdout.rstrip().endswith(
        "dry run: every check passed; nothing written (without --dry-run, 1 module would be "
        "written)"
    )


def test_a_divergent_change_is_refused_in_command_words(sample: Path):
    """The live process and a fresh import disagree: nothing is written, and the report
    speaks of the command, not of `persist` or `force`."""
    before = (sample / "pricing" / "cart.py").read_bytes()
    check = "import sys; 'pricing.cart' in sys.modules"
    result = run_cli("apply", "--patch", _fix(sample), "--verify", check, cwd=sample)
    assert result.returncode == 1
    assert (sample / "pricing" / "cart.py").read_bytes() == before
    assert "DIVERGENT" in result.stdout and "nothing is written" in result.stdout
    assert "forced" not in result.stdout and "persist" not in result.stdout
    last = result.stdout.rstrip().splitlines()[-1]
    assert last == "nothing written: verify failed; the files are as they were"


def test_without_checks_the_patched_modules_are_imported(sample: Path):
    """No --verify, no --test: the check imports each patched module; a patch whose module
    fails at import is never written (exit 1)."""
    (sample.parent / "cart.py").write_text("raise RuntimeError('broken at import')\n")
    before = (sample / "pricing" / "cart.py").read_bytes()
    result = run_cli(
        "apply", "--patch", f"pricing.coupons={sample.parent / 'cart.py'}", "--json", cwd=sample
    )
    assert result.returncode == 3  # the patch itself raised: the previous state is intact
    assert _json(result)["ok"] is False
    assert (sample / "pricing" / "cart.py").read_bytes() == before
    passing = run_cli("apply", "--patch", _fix(sample), "--json", cwd=sample)
    data = _json(passing)
    assert passing.returncode == 0, passing.stderr
    assert data["checks"][0]["run"]["code"] == "import pricing.cart\n"
    assert data["persisted"] == ["pricing.cart"]


def test_options_after_test_are_a_usage_error(sample: Path):
    """`--test --json`: --json would go to pytest, so apply says to move it; exit 2."""
    result = run_cli("apply", "--patch", _fix(sample), "--test", "-q", "--json", cwd=sample)
    assert result.returncode == 2
    assert "--json comes after --test" in result.stderr
    assert "put --json before --test" in result.stderr
    result = run_cli("apply", cwd=sample)
    assert result.returncode == 2 and "apply needs at least one --patch" in result.stderr
