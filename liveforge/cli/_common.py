"""What every command shares: exit codes, `--project` and `--json`, output, the runtime."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from liveforge.cli._exits import CommandError, ExitCode
from liveforge.cli._words import in_command_words
from liveforge.kernel.boundary._secrets import Scrubber

if TYPE_CHECKING:
    from liveforge.declarations.permissions import Mode
    from liveforge.kernel import Runtime

__all__ = [
    "CommandError",
    "ExitCode",
    "add_common",
    "add_global_options",
    "add_mode",
    "chosen_mode",
    "emit",
    "emit_error",
    "examples",
    "open_runtime",
    "positive_seconds",
    "project_dir",
    "run_structured",
    "run_tool",
]


def add_common(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    """Add `--project DIR` and, optionally, `--json` after the command; the same options
    before the command (on the top-level parser) give the defaults."""
    parser.add_argument(
        "--project",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the project to work on (default: the current directory)",
    )
    if json_flag:
        parser.add_argument(
            "--json",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print one JSON object with stable keys instead of text",
        )
        parser.set_defaults(json_output=True)


_GLOBAL_OPTIONS: dict[str, dict[str, Any]] = {
    "--this-python": {
        "action": "store_true",
        "default": False,
        "help": "run with this interpreter even when the project has its own environment",
    },
    "--project": {
        "metavar": "DIR",
        "default": ".",
        "help": "the project to work on (default: the current directory)",
    },
    "--json": {
        "action": "store_true",
        "default": False,
        "help": "commands that report: print one JSON object",
    },
    "--debug": {
        "action": "store_true",
        "default": False,
        "help": "show Python tracebacks of unexpected errors",
    },
}
"""The options `liveforge` takes before the command, with their defaults."""


def add_global_options(parser: argparse.ArgumentParser, *, before_command: bool = False) -> None:
    """Let `parser` take every global option (`--project`, `--json`, `--debug`,
    `--this-python`, `--version`), so they go before or after the command.

    Before the command (the top-level parser) they carry the defaults; after it they only
    override them (default `argparse.SUPPRESS`), options the command defines itself (`serve`'s
    `--project`, the commands' `--json`) stay its own, and `--json` on a command without
    JSON output is accepted but hidden: `liveforge` then says the command has none.
    """
    from liveforge import __version__

    taken = parser._option_string_actions
    for flag, spec in _GLOBAL_OPTIONS.items():
        if flag in taken:
            continue
        spec = dict(spec)
        if not before_command:
            spec["default"] = argparse.SUPPRESS
            if flag == "--json":
                spec["help"] = argparse.SUPPRESS
        parser.add_argument(flag, **spec)
    if "--version" not in taken:
        parser.add_argument(
            "--version",
            action="version",
            version=f"liveforge {__version__}",
            help=None if before_command else argparse.SUPPRESS,
        )


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above zero (e.g. `--timeout 30`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a usable time limit; give a number of seconds above 0, e.g. 30"
        )
    return value


def examples(text: str) -> str:
    """A sub-command's `--help` epilog: the examples, indented as written."""
    return "examples:\n" + text


def add_mode(parser: argparse.ArgumentParser, *, yes: bool = True) -> None:
    """Add `--mode MODE` (the permission mode) and, optionally, `--yes` (= full-auto)."""
    from liveforge.declarations.permissions import MODES

    parser.add_argument(
        "--mode",
        choices=MODES,
        help="permission mode: read-only (look and check only), ask (ask before anything "
        "changes the program, files or runs code; the default), auto-edit (patches in "
        "memory and checks run freely; writing files and running code ask), full-auto "
        "(nothing asks). Default: [tool.liveforge.permissions] mode, else ask",
    )
    if yes:
        parser.add_argument(
            "--yes", action="store_true", help="allow every tool without asking (--mode full-auto)"
        )


def chosen_mode(args: argparse.Namespace) -> Mode | None:
    """The mode `--mode`/`--yes` chose, or None to use the configured one."""
    mode: Mode | None = getattr(args, "mode", None)
    if getattr(args, "yes", False):
        if mode not in (None, "full-auto"):
            raise CommandError(
                f"--yes means --mode full-auto, which contradicts --mode {mode}; give one of them."
            )
        return "full-auto"
    return mode


def project_dir(args: argparse.Namespace) -> Path:
    """The `--project` directory, resolved; a usage error when it is not a directory."""
    root = Path(getattr(args, "project", ".") or ".").expanduser().resolve()
    if not root.is_dir():
        raise CommandError(
            f"--project {root} is not a directory; pass the folder that holds "
            "your package (or run the command from inside it)."
        )
    return root


@contextlib.contextmanager
def open_runtime(
    args: argparse.Namespace, *, checks: bool = False, long_lived: bool = False
) -> Iterator[Runtime]:
    """A Runtime over the `--project` directory with the project's check boundary
    (`[tool.liveforge.sandbox]`), closed (sandbox stopped) on exit.

    A one-shot command's checks prepare nothing for later ones (`CheckSettings.ahead`);
    a `long_lived` one's (a server's) pre-import libraries and make the next check's
    namespaces while idle. A command that runs `checks` starts its sandbox's template and
    copy-on-write probe at once, while the kernel is imported; unless the configuration
    names more than the checks' keys (a provider's key variables, registered as secrets
    when it is loaded, must not reach a process started before)."""
    from liveforge.config_files import only_check_keys, read_tables

    root = project_dir(args)
    tables = read_tables(root, os.environ)
    if checks and not long_lived and only_check_keys(tables[0]):
        _start_checks_ahead(root)
    from liveforge.check_config import validated_alone
    from liveforge.kernel import Runtime

    config = validated_alone(tables[0])
    if config is None:  # more than the checks' keys, or a wrong value: validated whole
        from liveforge.config import load_config

        config = load_config(root)
    rt = Runtime(
        project_root=root,
        check_settings=dataclasses.replace(config.sandbox.settings(root), ahead=long_lived),
        allow_paths=config.allow_paths,
        outside_project=config.outside_project,
    )
    try:
        yield rt
    finally:
        rt.close()


def _start_checks_ahead(root: Path) -> None:
    """Start what the first check waits for, in processes of their own: its template and
    the copy-on-write probe (in the temporary folder, where the checks' scratch lives)."""
    import tempfile

    from liveforge.kernel.boundary._overlay import probe_ahead
    from liveforge.kernel.checks._template import TemplateProcess

    TemplateProcess.start_ahead(root)
    probe_ahead(Path(tempfile.gettempdir()).resolve())


def emit(
    args: argparse.Namespace, payload: dict[str, Any], text: str, out: IO[str] | None = None
) -> None:
    """Print `payload` as JSON under `--json`, else `text`, on `out` (default sys.stdout)."""
    out = out or sys.stdout
    if getattr(args, "json", False):
        text = json.dumps(payload, indent=2, ensure_ascii=False, default=str)
    # no key value is printed, in any encoding, whatever a check or a tool produced
    text = Scrubber.current().text(text)
    out.write(text if text.endswith("\n") else text + "\n")
    out.flush()


def emit_error(args: argparse.Namespace | None, error: BaseException, code: ExitCode) -> None:
    """Report `error`: a JSON object on stdout under `--json`, always a line on stderr."""
    if args is not None and getattr(args, "json", False):
        payload: dict[str, Any] = {"ok": False, "command": getattr(args, "command", None)}
        project = getattr(args, "project", None)
        if isinstance(project, str):  # as the command's successful output names it
            payload["project"] = str(Path(project or ".").expanduser().resolve())
        payload["error"] = {
            "type": type(error).__name__,
            "message": in_command_words(str(error)),
            "exit_code": int(code),
        }
        text = Scrubber.current().text(json.dumps(payload, indent=2, ensure_ascii=False))
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    message = in_command_words(str(error))
    sys.stderr.write(Scrubber.current().text(f"liveforge: error: {message}") + "\n")


def run_tool(
    args: argparse.Namespace, name: str, arguments: dict[str, Any], extra: dict[str, Any]
) -> int:
    """Call one catalogue tool on a fresh runtime (with the command's `--patch`es applied
    first) and print its result; the exit code."""
    from liveforge.agent_setup import open_toolbox

    with open_runtime(args) as rt:
        patched = _patched(args, rt)
        result = open_toolbox(rt).call(name, arguments)
    payload = {
        "ok": not result.is_error,
        "command": args.command,
        "project": str(rt.project_root),
        **extra,
        **patched,
        "output": result.text,
    }
    if result.is_error:
        payload["error"] = {
            "type": "ToolError",
            "message": in_command_words(result.text),
            "exit_code": int(ExitCode.FAILED),
        }
    if result.is_error and not getattr(args, "json", False):
        sys.stderr.write(f"liveforge {args.command}: {in_command_words(result.text)}\n")
        return ExitCode.FAILED
    lines = [f"patched {row['summary']}" for row in patched.get("patches", [])]
    emit(args, payload, "\n".join([*lines, result.text]))
    return ExitCode.FAILED if result.is_error else ExitCode.OK


def run_structured(args: argparse.Namespace, build: Callable[[Runtime], dict[str, Any]]) -> int:
    """Print `build(rt)` (on a fresh runtime with the command's `--patch`es applied, tool
    context set) as the command's JSON object."""
    from liveforge.tools._context import using_runtime

    with open_runtime(args) as rt, using_runtime(rt):
        patched = _patched(args, rt)
        data = build(rt)
    payload = {
        "ok": True,
        "command": args.command,
        "project": str(rt.project_root),
        **patched,
        **data,
    }
    emit(args, payload, "")
    return ExitCode.OK


def _patched(args: argparse.Namespace, rt: Runtime) -> dict[str, Any]:
    """`{"patches": [...]}` after applying the command's `--patch`es; {} for a command
    without that option."""
    from liveforge.cli._patches import apply_patches, patch_rows

    if not hasattr(args, "patch"):
        return {}
    outside = bool(getattr(args, "outside_project", False))
    return {"patches": patch_rows(apply_patches(rt, args.patch, outside_project=outside))}
