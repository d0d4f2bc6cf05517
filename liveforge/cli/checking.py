"""`liveforge verify`, `test` and `runs`: sandboxed checks of patched code (one-shot).

`--patch TARGET=FILE` applies FILE's text to the dotted TARGET in memory first (a definition,
or a whole module), so a change can be checked before any file is touched. The checks are
the Runtime's own (`verify`, `run_tests`), run in a sandboxed child that carries the patches.
Exit code 0 when the check passed, 1 when it did not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.cli._common import CommandError, ExitCode, add_common, emit, open_runtime
from liveforge.kernel.defaults import TESTS_TIMEOUT, VERIFY_TIMEOUT

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime
    from liveforge.kernel._records import RunResult

__all__ = ["parse_patch", "register"]


def register(commands: Any) -> None:
    """Add the checking commands to the `liveforge` sub-command set."""
    verify = commands.add_parser(
        "verify",
        help="run a snippet in the sandbox, with patches applied",
        description="Run Python code in a sandboxed child that carries the patches. Without "
        "-c the code is read from stdin when piped, else each patched module is "
        "imported.",
    )
    _patch_args(verify)
    verify.add_argument("-c", "--code", help="Python code; a final expression's value is shown")
    verify.add_argument(
        "--timeout",
        type=float,
        default=VERIFY_TIMEOUT,
        help=f"seconds (default {VERIFY_TIMEOUT:g})",
    )
    add_common(verify)
    verify.set_defaults(handler=_verify)

    test = commands.add_parser(
        "test",
        help="run pytest in the sandbox, with patches applied",
        description="Run pytest in a sandboxed child that carries the patches. Arguments "
        "after `--` go to pytest.",
    )
    _patch_args(test)
    test.add_argument(
        "--timeout", type=float, default=TESTS_TIMEOUT, help=f"seconds (default {TESTS_TIMEOUT:g})"
    )
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
    )
    runs.add_argument("run_id", nargs="?", metavar="ID", help="a run id from the listing")
    add_common(runs)
    runs.set_defaults(handler=_runs)


def _patch_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--patch",
        action="append",
        default=[],
        metavar="TARGET=FILE",
        help="apply FILE's source to the dotted TARGET in memory first (repeatable)",
    )


def parse_patch(spec: str) -> tuple[str, Path]:
    """Split "TARGET=FILE"; a usage error naming the expected form otherwise."""
    target, sep, file = spec.partition("=")
    if not sep or not target.strip() or not file.strip():
        raise CommandError(f"--patch expects TARGET=FILE (e.g. pkg.mod.func=fix.py), got {spec!r}.")
    path = Path(file.strip()).expanduser()
    if not path.is_file():
        raise CommandError(f"--patch {target}: file {path} does not exist.")
    return target.strip(), path


def apply_patches(rt: Runtime, specs: list[str]) -> list[Change]:
    """Apply every `--patch` in one transaction: all of them or none."""
    parsed = [parse_patch(spec) for spec in specs]
    with rt.transaction() as changes:
        for target, path in parsed:
            rt.patch(target, path.read_text(encoding="utf-8"))
    return changes


def _result_payload(
    args: argparse.Namespace, rt: Runtime, changes: list[Change], result: RunResult
) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "command": args.command,
        "project": str(rt.project_root),
        "patches": [
            {"change_id": c.id, "target": c.target, "summary": c.summary()} for c in changes
        ],
        "run": result.model_dump(mode="json"),
    }


def _report(args: argparse.Namespace, rt: Runtime, changes: list[Change], result: RunResult) -> int:
    lines = [f"patched {c.summary()}" for c in changes] + [result.summary()]
    emit(args, _result_payload(args, rt, changes, result), "\n".join(lines))
    return ExitCode.OK if result.ok else ExitCode.CHECK_FAILED


def _verify(args: argparse.Namespace) -> int:
    with open_runtime(args) as rt:
        return _verify_in(args, rt)


def _verify_in(args: argparse.Namespace, rt: Runtime) -> int:
    changes = apply_patches(rt, args.patch)
    code = args.code
    if code is None and not sys.stdin.isatty() and not changes:
        code = sys.stdin.read()
    if code is not None and not code.strip():
        raise CommandError("the code to verify is empty; pass -c CODE or pipe code on stdin.")
    if code is None:
        if not changes:
            raise CommandError(
                "nothing to verify: pass -c CODE, pipe code on stdin, or give "
                "--patch TARGET=FILE (then each patched module is imported)."
            )
        code = "".join(f"import {name}\n" for name in dict.fromkeys(c.module for c in changes))
    return _report(args, rt, changes, rt.verify(code, timeout=args.timeout))


def _test(args: argparse.Namespace) -> int:
    pytest_args = [a for a in args.pytest_args if a != "--"] if args.pytest_args else []
    with open_runtime(args) as rt:
        changes = apply_patches(rt, args.patch)
        return _report(args, rt, changes, rt.run_tests(pytest_args, timeout=args.timeout))


def _runs(args: argparse.Namespace) -> int:
    with open_runtime(args) as rt:
        return _runs_in(args, rt)


def _runs_in(args: argparse.Namespace, rt: Runtime) -> int:
    if args.run_id:
        result = rt.run(args.run_id)
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
