"""`liveforge completion bash|zsh|fish`: the shell code that makes Tab complete liveforge.

The code asks the `liveforge` command itself for candidates (argcomplete), so commands,
options and their help texts always match the installed version.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from liveforge.cli._common import ExitCode, examples

__all__ = ["SHELLS", "register"]

SHELLS = {
    "bash": '~/.bashrc:  eval "$(liveforge completion bash)"',
    "zsh": '~/.zshrc:   eval "$(liveforge completion zsh)"',
    "fish": "fish:       liveforge completion fish > ~/.config/fish/completions/liveforge.fish",
}

EXAMPLES = "".join(f"  {line}\n" for line in SHELLS.values())


def register(commands: Any) -> None:
    """Add `completion` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "completion",
        help="print shell code for Tab completion (bash, zsh, fish)",
        description="Print the code that makes Tab complete liveforge's commands and "
        "options in SHELL. Load it from your shell's start-up file:",
        epilog=examples(EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=sorted(SHELLS), help="your shell")
    parser.set_defaults(handler=_completion)


def _completion(args: argparse.Namespace) -> int:
    import argcomplete

    sys.stdout.write(argcomplete.shellcode(["liveforge"], shell=args.shell))
    return ExitCode.OK
