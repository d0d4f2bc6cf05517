"""Messages in the words of the front end the user is in.

The kernel and the tools give their advice as Python calls (`history()`, `patch_module()`,
`persist with force=True`) and name the tool that failed (`view_source failed:
TargetNotFound: ...`): the right words for a program or a model. A person at the command
line gets the command that takes the step, and in the chat the slash command.
"""

from __future__ import annotations

import re

__all__ = ["in_chat_words", "in_command_words"]

_COMMON = [
    (" See history().", ""),
    ("give one shown by history() (e.g. 'c3')", "give a change id (e.g. c3)"),
]

_COMMANDS = [
    *_COMMON,
    (
        "Patch the module with patch_module() to change several definitions at once.",
        "To change several definitions at once, patch the whole module: "
        "--patch MODULE=FILE with the module's full source.",
    ),
    ("patch() adds a definition that does not exist yet.", "--patch adds a new definition."),
    ("list the runs with rt.runs()", "list the runs with `liveforge runs`"),
    ("(rt.verify(...) / rt.run_tests(...))", "(liveforge verify / liveforge test)"),
    ("Roll it back to check other changes.", "Leave that --patch out to check the others."),
]

_CHAT = [
    *_COMMON,
    ("(rt.verify(...) / rt.run_tests(...))", "(/verify CODE or /tests)"),
    ("persist with force=True", "write anyway with /persist --force"),
    ("or pass force=True", "or /undo them"),
    ("list the runs with rt.runs()", "list the runs with /runs"),
    ("or unpersist() puts the file back", "or /undo puts the file back"),
    ("Undo the persist first (unpersist())", "Undo the persist first (/undo)"),
    ("Roll it back to check other changes.", "/undo it to check other changes."),
    (
        "Restart the program to drop it",
        "Restart the chat to drop it (/quit, then `liveforge chat --resume` goes on with this "
        "session)",
    ),
    (
        "Pass outside_project=True (to patch(), or to Runtime()) to patch it anyway.",
        "Set outside_project = true under [tool.liveforge] in pyproject.toml to patch it anyway.",
    ),
]

_ALLOW_PATHS = re.compile(r"allow the folder: Runtime\(allow_paths=\[('[^']*')\]\)")
"""The kernel's advice to open a folder for writes, as a configuration step."""

_TOOL_FAILED = re.compile(r"^\w+ failed: \w+: ")


def in_command_words(text: str) -> str:
    """`text` for a one-shot command: the tool's name and the error's class dropped from
    the front, Python-API advice replaced by the command-line step."""
    text = _TOOL_FAILED.sub("", text, count=1)
    for api, words in _COMMANDS:
        text = text.replace(api, words)
    return _ALLOW_PATHS.sub(r"add \1 to allow_paths under [tool.liveforge] in pyproject.toml", text)


def in_chat_words(text: str) -> str:
    """`text` for the chat: Python-API advice replaced by the slash command that does it."""
    for api, words in _CHAT:
        text = text.replace(api, words)
    return _ALLOW_PATHS.sub(r"add \1 to allow_paths under [tool.liveforge] in pyproject.toml", text)
