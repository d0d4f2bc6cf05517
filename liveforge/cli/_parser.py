"""The argument parser of every `liveforge` command: usage errors said in full.

argparse prints the usage and a line, and exits with 2. Here, in addition, an unknown
command or choice gets "did you mean", and when `--json` is on the command line the error is
also the one JSON object on stdout that the other failures print.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from typing import Any, ClassVar, NoReturn

from liveforge.cli._exits import ExitCode

__all__ = ["CliParser", "wants_json"]

_UNRECOGNIZED = "unrecognized arguments: "
_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


def wants_json(argv: list[str]) -> bool:
    """Whether `--json` is among `argv`'s options (before a `--`)."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in words


class CliParser(argparse.ArgumentParser):
    """An ArgumentParser (its sub-command parsers too) whose usage errors suggest close
    matches and, under `--json`, print a JSON error object."""

    #: the command line being parsed (set by `parse_args`), to see whether --json was asked
    argv: ClassVar[list[str]] = []

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        CliParser.argv = list(sys.argv[1:] if args is None else args)
        return super().parse_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        if message.startswith(_UNRECOGNIZED):
            # argparse says it for the top-level parser; the command's own parser knows the
            # options, and its usage is the one to show
            named = self._command_parser()
            if named is not self:
                named.error(message)
            message += _option_suggestions(message, self)
        message = _with_suggestion(message)
        if wants_json(CliParser.argv):
            command = self.prog.removeprefix("liveforge").strip() or self._command_given()
            payload = {
                "ok": False,
                "command": command,
                "error": {
                    "type": "UsageError",
                    "message": message,
                    "exit_code": int(ExitCode.USAGE),
                },
            }
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
            sys.stdout.flush()
        super().error(message)

    def _command_parser(self, words: list[str] | None = None) -> CliParser:
        """The parser of the (nested) command the command line names; this one if none."""
        if words is None:
            argv = CliParser.argv
            words = argv[: argv.index("--")] if "--" in argv else argv
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for at, word in enumerate(words):
                    parser = action.choices.get(word)
                    if isinstance(parser, CliParser):
                        return parser._command_parser(words[at + 1 :])
        return self

    def _command_given(self) -> str | None:
        """The first word of the command line that names one of this parser's commands."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return next((w for w in CliParser.argv if w in action.choices), None)
        return None


def _option_suggestions(message: str, parser: argparse.ArgumentParser) -> str:
    """`; did you mean '--start' (for '--strat')?` for each unknown option near a known one."""
    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for word in message.removeprefix(_UNRECOGNIZED).split():
        name = word.partition("=")[0]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if name.startswith("--") and close:
            hints.append(f"{close[0]!r} (for {name!r})")
    return f"; did you mean {', '.join(hints)}?" if hints else ""


def _with_suggestion(message: str) -> str:
    """argparse's "invalid choice" message with the closest choice offered."""
    found = _CHOICE.search(message)
    if found is None:
        return message
    choices = re.findall(r"'([^']*)'", found.group(2))
    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
    return message + (f"; did you mean {close[0]!r}?" if close else "")
