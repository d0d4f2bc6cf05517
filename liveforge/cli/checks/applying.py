"""`liveforge apply`: patch in memory, check, and write the files only if every check passed.

The one-shot form of the whole loop. `--patch TARGET=FILE` (repeatable) applies FILE's text
to the dotted TARGET in memory, all patches or none; then the checks run in the sandbox:
`--verify CODE` (a snippet, in a fresh import and in a fork of the live process), `--test
[PYTEST ARGS]` (the project's tests), or, when neither is given, a verify that imports each
patched module. Only when every check passed are the patched modules persisted — with the
same refusals as the API's `persist` (a divergent change, a file changed on disk since it was
read). Otherwise nothing is written, and the report says so and why.

Exit codes: 0 written (or, with `--dry-run`, every check passed), 1 a check failed, 2 usage,
3 a patch or the write was refused.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from liveforge.cli._common import (
    CommandError,
    ExitCode,
    add_common,
    emit,
    examples,
    open_runtime,
    positive_seconds,
)
from liveforge.cli._patches import add_patch_option, imports_of
from liveforge.kernel.defaults import TESTS_TIMEOUT, VERIFY_TIMEOUT

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime
    from liveforge.kernel.checks._records import RunResult

__all__ = ["register"]


EXAMPLES = """\
  liveforge apply --patch pricing.cart.Line.subtotal=fix.py
                                  import the patched module fresh and live; write if it passes
  liveforge apply --patch pricing.cart.Line.subtotal=fix.py \\
      --verify "from pricing.cart import Line; assert Line('a', 100, 10).subtotal() == 900"
  liveforge apply --patch pricing.cart.Line.subtotal=fix.py --test -q tests/test_cart.py
                                  everything after --test goes to pytest: put it last
  liveforge apply --patch pricing.cart=cart.py --dry-run --json
                                  the checks and the diff, nothing written
"""

# apply's own options: seen among the arguments after --test, they were meant for apply
_OWN_OPTIONS = (
    "--patch",
    "--verify",
    "--dry-run",
    "--json",
    "--project",
    "--timeout",
    "--network",
    "--no-live",
    "--verbose",
)


def register(commands: Any) -> None:
    """Add `apply` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "apply",
        help="patch, check, and write the files only if the checks pass",
        description="Apply each --patch in memory, run the checks in the sandbox (--verify "
        "CODE, --test [PYTEST ARGS]; without either, each patched module is imported fresh "
        "and in a fork of the live process), and write the patched modules to their files "
        "only if every check passed. Nothing is written otherwise, and the report says why.",
        epilog=examples(EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_patch_option(parser, then="check it")
    parser.add_argument(
        "--verify",
        metavar="CODE",
        help="Python code to run in the sandbox with the patches; a final expression's "
        "value is shown",
    )
    parser.add_argument(
        "--test",
        nargs=argparse.REMAINDER,
        metavar="PYTEST ARGS",
        help="run the project's tests with the patches; the rest of the line goes to pytest, "
        "so put --test last",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="run the checks and show the diff; write nothing"
    )
    parser.add_argument(
        "--no-live",
        action="store_true",
        help="verify with a fresh import only (skip the run in a fork of the live process)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        help=f"seconds each check may take (default {VERIFY_TIMEOUT:g} for --verify, "
        f"{TESTS_TIMEOUT:g} for --test)",
    )
    parser.add_argument(
        "--network",
        action="store_true",
        default=None,
        help="let the checks open TCP connections (off by default)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the checks' output as they run (on stderr under --json)",
    )
    add_common(parser)
    parser.set_defaults(handler=_apply)


@dataclass
class _Outcome:
    """What one `apply` did, for the text and the JSON report."""

    changes: list[Change]
    diff: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    persisted: list[str] = field(default_factory=list)
    refusal: str | None = None  # why nothing was written
    code: ExitCode = ExitCode.OK


def _apply(args: argparse.Namespace) -> int:
    if not args.patch:
        raise CommandError(
            "apply needs at least one --patch TARGET=FILE, e.g. "
            "liveforge apply --patch pkg.mod.func=fix.py --test"
        )
    pytest_args = _pytest_args(args.test)
    if args.verify is not None and not args.verify.strip():
        raise CommandError("--verify got empty code; give a snippet, e.g. --verify 'import pkg'.")
    with open_runtime(args, checks=True) as rt:
        outcome = _run(args, rt, pytest_args)
        emit(args, _payload(args, rt, outcome), _text(args, outcome))
    return outcome.code


def _pytest_args(given: list[str] | None) -> list[str] | None:
    """pytest's arguments after --test (None: no tests); a usage error when one of apply's
    own options landed there."""
    if given is None:
        return None
    words = given[1:] if given[:1] == ["--"] else given
    head = words[: words.index("--")] if "--" in words else words
    misplaced = [w for w in head if w.partition("=")[0] in _OWN_OPTIONS]
    if misplaced:
        raise CommandError(
            f"{misplaced[0]} comes after --test, which passes the rest of the line to pytest; "
            f"put {misplaced[0]} before --test."
        )
    return [w for w in words if w != "--"] if "--" in head else words


def _run(args: argparse.Namespace, rt: Runtime, pytest_args: list[str] | None) -> _Outcome:
    from liveforge.cli._patches import apply_patches

    changes = apply_patches(rt, args.patch)
    modules = list(dict.fromkeys(c.module for c in changes))
    outcome = _Outcome(changes, "".join(rt.diff(m) for m in modules))
    code = args.verify
    if code is None and pytest_args is None:
        code = imports_of(changes)
    failed = None
    if code is not None:
        failed = _check(args, rt, outcome, "verify", lambda: _verify(args, rt, code))
    if pytest_args is not None:
        if failed is None:
            failed = _check(args, rt, outcome, "tests", lambda: _tests(args, rt, pytest_args))
        else:
            outcome.checks.append({"check": "tests", "run": None, "skipped": f"{failed} failed"})
    if failed is not None:
        outcome.refusal = f"{failed} failed"
        outcome.code = ExitCode.CHECK_FAILED
    elif not outcome.diff:
        outcome.refusal = "the patches leave every file as it is"
    elif args.dry_run:
        outcome.refusal = "--dry-run"
    else:
        _persist(rt, modules, outcome)
    return outcome


def _verify(args: argparse.Namespace, rt: Runtime, code: str) -> RunResult:
    timeout = {"timeout": args.timeout} if args.timeout else {}
    live = False if args.no_live else None
    return rt.verify(code, live=live, network=args.network, **timeout)


def _tests(args: argparse.Namespace, rt: Runtime, pytest_args: list[str]) -> RunResult:
    timeout = {"timeout": args.timeout} if args.timeout else {}
    return rt.run_tests(pytest_args, network=args.network, **timeout)


def _check(
    args: argparse.Namespace, rt: Runtime, outcome: _Outcome, name: str, work: Any
) -> str | None:
    """Run one check with progress; its name when it failed, else None."""
    from liveforge.cli.checks._progress import follow_check, stream_for

    label = "running the tests in the sandbox" if name == "tests" else "verifying in the sandbox"
    stream = stream_for(args.verbose, args.json)
    result = follow_check(rt, label, work, tests=name == "tests", stream=stream)
    outcome.checks.append({"check": name, "run": result})
    return None if result.ok else name


def _persist(rt: Runtime, modules: list[str], outcome: _Outcome) -> None:
    from liveforge.kernel.errors import PersistError

    try:
        persisted = rt.persist(modules)
    except PersistError as exc:
        outcome.refusal = f"the write was refused: {_cli_words(str(exc))}"
        outcome.code = ExitCode.FAILED
        return
    outcome.written, outcome.persisted = persisted.paths, persisted.modules


def _cli_words(message: str) -> str:
    """The kernel's persist advice (API calls) in the words of this command."""
    from liveforge.cli._words import in_command_words

    for api, cli in (
        ("or persist with force=True to overwrite it", "then run liveforge apply again"),
        ("or persist with force=True to write it anew", "then run liveforge apply again"),
        (", or persist with force=True", ""),
        (" Make them agree (patch, reload or roll back) and verify again.", ""),
        ("persist refuses them unless forced", "nothing is written"),
    ):
        message = message.replace(api, cli)
    return in_command_words(message)


def _payload(args: argparse.Namespace, rt: Runtime, outcome: _Outcome) -> dict[str, Any]:
    from liveforge.cli._patches import patch_rows

    checks = [
        {**c, "run": c["run"].model_dump(mode="json") if c["run"] is not None else None}
        for c in outcome.checks
    ]
    payload: dict[str, Any] = {
        "ok": outcome.code == ExitCode.OK,
        "command": "apply",
        "project": str(rt.project_root),
        "patches": patch_rows(outcome.changes),
        "diff": outcome.diff,
        "checks": checks,
        "dry_run": bool(args.dry_run),
        "written": outcome.written,
        "persisted": outcome.persisted,
    }
    if outcome.code != ExitCode.OK:
        payload["error"] = {
            "type": "CheckFailed" if outcome.code == ExitCode.CHECK_FAILED else "PersistError",
            "message": _refusal_line(outcome),
            "exit_code": int(outcome.code),
        }
    return payload


def _text(args: argparse.Namespace, outcome: _Outcome) -> str:
    lines = [f"patched {c.summary()}" for c in outcome.changes]
    if outcome.diff:
        lines.append(outcome.diff.rstrip("\n"))
    for check in outcome.checks:
        run = check["run"]
        lines.append(
            f"{check['check']}: not run ({check['skipped']})"
            if run is None
            else f"{check['check']}: {_cli_words(run.summary())}"
        )
    if outcome.written:
        lines += [f"wrote {m} -> {p}" for m, p in zip(outcome.persisted, outcome.written)]
    else:
        lines.append(_refusal_line(outcome))
    return "\n".join(lines)


def _refusal_line(outcome: _Outcome) -> str:
    reason = outcome.refusal or ""
    if reason == "--dry-run":
        count = len({c.module for c in outcome.changes})
        return (
            f"dry run: every check passed; nothing written (without --dry-run, {count} "
            f"module{'s' if count != 1 else ''} would be written)"
        )
    if outcome.code == ExitCode.CHECK_FAILED:
        return f"nothing written: {reason}; the files are as they were"
    return f"nothing written: {reason}"
