"""`liveforge` command line entry point (also `python -m liveforge`).

Every command group lives in its own module of `liveforge.cli` and registers itself on the
parser here; exit codes are `liveforge.cli.ExitCode` (documented in the README).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

import liveforge
from liveforge.cli._common import CommandError, ExitCode, emit_error
from liveforge.kernel.errors import ConfigError, LiveforgeError

COMMAND_MODULES = ["chat", "demo", "run", "reading", "checking", "memory", "mcp", "serve"]
"""Modules of liveforge.cli, in help order; each has `register(commands)`."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="liveforge",
        description="A live, self-modifying Python runtime for LLM agents.",
        epilog="exit codes: 0 ok, 1 check failed, 2 usage or configuration error, "
        "3 operation failed, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"liveforge {liveforge.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"liveforge.cli.{name}")
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.OK
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        # the reader went away (e.g. `| head`); exit quietly like other command-line tools
        sys.stdout = open(os.devnull, "w")
        return ExitCode.OK
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return ExitCode.INTERRUPTED
    except CommandError as exc:
        emit_error(args, exc, exc.exit_code)
        return exc.exit_code
    except ConfigError as exc:
        emit_error(args, exc, ExitCode.USAGE)
        return ExitCode.USAGE
    except LiveforgeError as exc:
        emit_error(args, exc, ExitCode.FAILED)
        return ExitCode.FAILED


if __name__ == "__main__":
    sys.exit(main())
