"""`liveforge` command line entry point (also `python -m liveforge`).

Every command group lives in its own module of `liveforge.cli` and registers itself on the
parser here; exit codes are `liveforge.cli.ExitCode` (documented in docs/commands.md). Global
options (`--project`, `--json`, `--debug`, `--this-python`, `--version`) go before or after
the command, nested ones (`memory list`) included.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from liveforge.cli._common import CommandError, ExitCode, add_global_options, emit_error
from liveforge.cli._faults import describe_fault
from liveforge.cli._parser import CliParser
from liveforge.kernel.boundary._processes import protect_process
from liveforge.kernel.errors import ConfigError, LiveforgeError
from liveforge.kernel.live._interpreter import announce

COMMAND_MODULES = [
    "chat",
    "demo",
    "run",
    "reading",
    "checks.checking",
    "checks.applying",
    "sessions",
    "memory",
    "watch",
    "mcp",
    "acp",
    "serve",
    "completion",
]
"""Modules of liveforge.cli, in help order; each has `register(commands)`."""

COMMANDS: dict[str, tuple[str, str]] = {
    "chat": ("chat", "interactive session: talk to the agent about the live program"),
    "demo": ("demo", "watch the agent fix a bug in a sample project (replay, offline)"),
    "run": ("run", "run one agent task non-interactively"),
    "inspect": ("reading", "tree of packages, modules, classes and functions"),
    "view": ("reading", "in-memory source of a module, class or function"),
    "find": ("reading", "find definitions by name"),
    "verify": ("checks.checking", "run a snippet in the sandbox, with patches applied"),
    "test": ("checks.checking", "run pytest in the sandbox, with patches applied"),
    "runs": ("checks.checking", "list sandbox run records, or show one"),
    "apply": ("checks.applying", "patch, check, and write the files only if the checks pass"),
    "history": ("sessions", "the changes of a chat session, from its transcript"),
    "diff": ("sessions", "what a chat session holds in memory, against the files"),
    "memory": (
        "memory",
        "list, search, show, add, edit and delete the agent's memories of the project",
    ),
    "watch": ("watch", "run a program and apply each file save to it live"),
    "mcp": ("mcp", "serve the tool catalogue over MCP (stdio); list the agent's MCP servers"),
    "acp": ("acp", "serve editors as an ACP agent over stdio (Zed and other ACP clients)"),
    "serve": ("serve", "serve the project over HTTP and WebSocket (gateway and web UI)"),
    "completion": ("completion", "print shell code for Tab completion (bash, zsh, fish)"),
}
"""Each command's module and its line in `liveforge --help`, so that a command line imports
only the module of the command it runs (a module not listed here is always imported)."""

EPILOG = """\
examples:
  liveforge demo                               the whole loop on a sample project, offline
  liveforge chat --project ~/src/shop          talk to the agent about a live program
  liveforge --project ~/src/shop inspect shop  global options go before or after the command
  liveforge watch -- app.py                    run app.py; each file save applies to it live

exit codes: 0 ok, 1 check failed, 2 usage or configuration error, 3 operation failed,
4 a tool call was refused (run), 130 interrupted. `liveforge COMMAND --help` shows each
command's options and examples.
"""


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The top-level argument parser with every sub-command registered.

    Given the command line `argv`, only the module of the command it names is imported;
    the other commands are listed by name and help line (liveforge starts faster)."""
    parser = CliParser(
        prog="liveforge",
        description="A live, self-modifying Python runtime for LLM agents.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_global_options(parser, before_command=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else _chosen_command(argv)
    for name in COMMAND_MODULES:
        listed = [command for command, (module, _) in COMMANDS.items() if module == name]
        if argv is None or not listed or chosen in listed:
            importlib.import_module(f"liveforge.cli.{name}").register(commands)
            continue
        for listed_name in listed:
            commands.add_parser(listed_name, help=COMMANDS[listed_name][1], add_help=False)
    if argv is None or chosen not in COMMANDS:
        _plugin_commands(commands)
    for command in subcommands(parser):
        add_global_options(command)
    return parser


def subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every sub-command's parser under `parser`, nested ones (`memory list`) included."""
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in dict.fromkeys(action.choices.values()):  # an alias is the same parser
                found += [command, *subcommands(command)]
    return found


def _chosen_command(argv: list[str]) -> str | None:
    """The built-in command `argv` names (None: none, or a plugin's)."""
    words = iter(argv)
    for word in words:
        if word == "--":
            return None
        if word == "--project":
            next(words, None)
        elif word in COMMANDS:
            return word
    return None


def _plugin_commands(commands: argparse._SubParsersAction) -> None:
    """Sub-commands of installed plugins; a plugin that fails is named on stderr."""
    import importlib.metadata

    from liveforge.declarations.plugins import ENTRY_POINT_GROUP

    if not importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        return  # no plugin installed: the plugin machinery need not load
    from liveforge.declarations.plugins import PluginHost
    from liveforge.impls import plugins  # noqa: F401  (registers the PluginHost bodies)

    host = PluginHost().load()
    host.call("liveforge_cli", commands=commands)
    for line in host.problems + [f.describe() for f in host.take_failures()]:
        sys.stderr.write(f"liveforge: {line}\n")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit code.

    Run as a program (no `argv`), the process first makes itself non-dumpable: no check,
    and no other process of the user, can read its environment (API keys) or memory
    through /proc."""
    if argv is None:
        protect_process()
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(None if "_ARGCOMPLETE" in os.environ else words)
    _complete(parser)
    args = parser.parse_args(argv)
    if args.command is not None and not hasattr(args, "handler"):  # a command line misread
        parser = build_parser()
        args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.OK
    if args.json and not getattr(args, "json_output", False):
        parser.error(f"liveforge {args.command} has no --json output")
    project = getattr(args, "project", None)
    if isinstance(project, list):  # serve: with several projects, each worker picks its own
        project = (
            project[0].rpartition("=")[2] if len(project) == 1 else "." if not project else None
        )
    if project is not None and not args.this_python:
        from liveforge import project_env

        advice = project_env.enter(project or ".", sys.argv[1:] if argv is None else argv)
        if advice is not None:
            emit_error(args, CommandError(advice), ExitCode.USAGE)
            return ExitCode.USAGE
    # in the Python that runs the command (`project_env.enter` may have handed over to the
    # project's own)
    announce(lambda sentence: sys.stderr.write(f"liveforge: warning: {sentence}\n"))
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
    except (Exception, SystemExit) as exc:  # project code that raised or exited, or a bug
        if args.debug:
            raise
        emit_error(args, CommandError(describe_fault(exc, args.project)), ExitCode.FAILED)
        return ExitCode.FAILED


def _complete(parser: argparse.ArgumentParser) -> None:
    """Answer a shell's Tab request (set up with `liveforge completion SHELL`) and exit."""
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)


if __name__ == "__main__":
    sys.exit(main())
