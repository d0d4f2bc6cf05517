"""`liveforge verify`, `test` and `runs`: sandboxed checks of patched code (one-shot).

`--patch TARGET=FILE` applies FILE's text to the dotted TARGET in memory first (a definition,
or a whole module), so a change can be checked before any file is touched. The checks are
the Runtime's own (`verify`, `run_tests`), run in a sandboxed child that carries the patches.
Exit code 0 when the check passed, 1 when it did not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
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
from liveforge.cli._patches import add_patch_option, apply_patches, imports_of, patch_rows
from liveforge.cli.checks._progress import follow_check, stream_for
from liveforge.kernel.defaults import TESTS_TIMEOUT, VERIFY_TIMEOUT

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime
    from liveforge.kernel.checks._records import RunResult

__all__ = ["register"]


EXAMPLES_VERIFY = """\
  liveforge verify "from pricing.cart import Line; Line('a', 100, 10).subtotal()"
  liveforge verify -c "import pricing; print(pricing.parse_coupon('SAVE10'))"
  liveforge verify --patch pricing.cart.Line.subtotal=fix.py -c "from pricing.cart import Line"
  echo "assert 1 + 1 == 2" | liveforge verify
"""


EXAMPLES_TEST = """\
  liveforge test                                  the project's whole suite
  liveforge test --patch pricing.cart.Line.subtotal=fix.py -- -q tests/test_cart.py
  liveforge test -v -- -k discount                pytest's output as it runs
"""


EXAMPLES_RUNS = """\
  liveforge runs                                  newest first
  liveforge runs 20250101-120000-000000-abcdef    one run in full
"""


def register(commands: Any) -> None:
    """Add the checking commands to the `liveforge` sub-command set."""
    verify = commands.add_parser(
        "verify",
        help="run a snippet in the sandbox, with patches applied",
        description="Run Python code in a sandboxed child that carries the patches, and in a "
        "fork of this process with the patches live; when the two disagree the check fails "
        "as divergent. The code is CODE (or -c CODE); without it, it is read from stdin when "
        "piped, else each patched module is imported.",
        epilog=examples(EXAMPLES_VERIFY),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _patch_args(verify)
    verify.add_argument(
        "snippet",
        nargs="?",
        metavar="CODE",
        help="Python code; a final expression's value is shown",
    )
    verify.add_argument("-c", "--code", help="the same as CODE")
    verify.add_argument(
        "--no-live",
        action="store_true",
        help="skip the run in a fork of the live process (a fresh import only)",
    )
    verify.add_argument(
        "--timeout",
        type=positive_seconds,
        default=VERIFY_TIMEOUT,
        help=f"seconds (default {VERIFY_TIMEOUT:g})",
    )
    _network_arg(verify)
    add_common(verify)
    verify.set_defaults(handler=_verify)

    test = commands.add_parser(
        "test",
        help="run pytest in the sandbox, with patches applied",
        description="Run pytest in a sandboxed child that carries the patches. Arguments "
        "after `--` go to pytest.",
        epilog=examples(EXAMPLES_TEST),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _patch_args(test)
    test.add_argument(
        "--timeout",
        type=positive_seconds,
        default=TESTS_TIMEOUT,
        help=f"seconds (default {TESTS_TIMEOUT:g})",
    )
    _network_arg(test)
    test.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        help="arguments for pytest, after `--` (e.g. -- -q tests/test_x.py)",
    )
    add_common(test)
    test.set_defaults(handler=_test)

    runs = commands.add_parser(
        "runs",
        help="list sandbox run records, or show one",
        description="List the kept records under sandbox_runs/ (newest first), or show one.",
        epilog=examples(EXAMPLES_RUNS),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    runs.add_argument("run_id", nargs="?", metavar="ID", help="a run id from the listing")
    add_common(runs)
    runs.set_defaults(handler=_runs)


def _network_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--network",
        action="store_true",
        default=None,
        help="let the check open TCP connections (off by default; `network = true` under "
        "[tool.liveforge.sandbox] turns it on for every check)",
    )


def _patch_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the check's output as it runs (on stderr under --json)",
    )
    add_patch_option(parser, then="check")


def _result_payload(
    args: argparse.Namespace, rt: Runtime, changes: list[Change], result: RunResult
) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "command": args.command,
        "project": str(rt.project_root),
        "patches": patch_rows(changes),
        "run": result.model_dump(mode="json"),
        **(
            {}
            if result.ok
            else {
                "error": {
                    "type": "CheckFailed",
                    "message": result.headline(),
                    "exit_code": int(ExitCode.CHECK_FAILED),
                }
            }
        ),
    }


def _report(args: argparse.Namespace, rt: Runtime, changes: list[Change], result: RunResult) -> int:
    lines = [f"patched {c.summary()}" for c in changes] + [result.summary()]
    emit(args, _result_payload(args, rt, changes, result), "\n".join(lines))
    return ExitCode.OK if result.ok else ExitCode.CHECK_FAILED


def _verify(args: argparse.Namespace) -> int:
    with open_runtime(args, checks=True) as rt:
        return _verify_in(args, rt)


def _verify_in(args: argparse.Namespace, rt: Runtime) -> int:
    if args.code is not None and args.snippet is not None:
        raise CommandError(
            "verify got the code twice (CODE and -c CODE); give it once, e.g. "
            'liveforge verify "assert 1 + 1 == 2".'
        )
    changes = apply_patches(rt, args.patch, outside_project=args.outside_project)
    code = args.code if args.code is not None else args.snippet
    if code is None and not sys.stdin.isatty() and not changes:
        code = sys.stdin.read()
    if code is not None and not code.strip():
        raise CommandError(
            "the code to verify is empty; give it as liveforge verify CODE, or pipe it on stdin."
        )
    if code is None:
        if not changes:
            raise CommandError(
                "nothing to verify: give the code (liveforge verify CODE), pipe it on stdin, or "
                "give --patch TARGET=FILE (then each patched module is imported)."
            )
        code = imports_of(changes)
    live = False if args.no_live else None
    check = lambda: rt.verify(code, timeout=args.timeout, live=live, network=args.network)  # noqa: E731
    result = _follow(args, rt, check, tests=False)
    return _report(args, rt, changes, result)


def _test(args: argparse.Namespace) -> int:
    pytest_args = [a for a in args.pytest_args if a != "--"] if args.pytest_args else []
    with open_runtime(args, checks=True) as rt:
        changes = apply_patches(rt, args.patch, outside_project=args.outside_project)
        result = _follow(
            args,
            rt,
            lambda: rt.run_tests(pytest_args, timeout=args.timeout, network=args.network),
            tests=True,
        )
        return _report(args, rt, changes, result)


def _follow(
    args: argparse.Namespace, rt: Runtime, work: Callable[[], RunResult], *, tests: bool
) -> RunResult:
    """Run one check with progress on the terminal (and its output under -v)."""
    label = "running the tests in the sandbox" if tests else "verifying in the sandbox"
    return follow_check(rt, label, work, tests=tests, stream=stream_for(args.verbose, args.json))


def _runs(args: argparse.Namespace) -> int:
    with open_runtime(args) as rt:
        return _runs_in(args, rt)


def _runs_in(args: argparse.Namespace, rt: Runtime) -> int:
    if args.run_id:
        result = rt.run(args.run_id)  # an unknown id's advice is put in command words
        emit(
            args,
            {
                "ok": True,
                "command": "runs",
                "project": str(rt.project_root),
                "run": result.model_dump(mode="json"),
            },
            result.summary(),
        )
        return ExitCode.OK
    rows = rt.runs()
    text = "\n".join(f"{r.run_id}  {'ok  ' if r.ok else 'FAIL'}  {r.headline}" for r in rows)
    emit(
        args,
        {
            "ok": True,
            "command": "runs",
            "project": str(rt.project_root),
            "runs": [r.model_dump(mode="json") for r in rows],
        },
        text or "no sandbox runs recorded yet",
    )
    return ExitCode.OK
