"""`liveforge` command line entry point (also `python -m liveforge`)."""

from __future__ import annotations

import argparse
import sys

import liveforge


def build_parser() -> argparse.ArgumentParser:
    """The top-level argument parser; sub-commands register themselves here."""
    parser = argparse.ArgumentParser(
        prog="liveforge",
        description="A live, self-modifying Python runtime for LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"liveforge {liveforge.__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
