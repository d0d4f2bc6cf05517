"""The chat's input line: multi-line editing, persistent history, completion.

Enter sends; Alt-Enter (or Esc then Enter) starts a new line, and so does Enter after a
trailing backslash. History is kept per project in `.liveforge/chat_history`. Tab completes
slash commands at the start of the input and dotted paths anywhere (`pricing.ca` ->
`pricing.cart`), from the live modules, so names added by patches complete too.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from liveforge.kernel.files._statefolder import state_folder

__all__ = ["ChatCompleter", "dotted_candidates", "make_prompt_session"]

_DOTTED = re.compile(r"[A-Za-z_][\w.]*$")


def _children(prefix: str) -> Iterable[str]:
    """Attribute and submodule names under the object the dotted `prefix` names."""
    parts = prefix.split(".")
    obj: Any = sys.modules.get(parts[0])
    for part in parts[1:]:
        obj = getattr(obj, part, None) or sys.modules.get(f"{prefix.rsplit('.', 1)[0]}.{part}")
        if obj is None:
            return []
    if obj is None:
        return []
    names = {n for n in dir(obj) if not n.startswith("__")}
    names.update(
        name.rsplit(".", 1)[1]
        for name in list(sys.modules)
        if name.startswith(prefix + ".") and name.count(".") == prefix.count(".") + 1
    )
    if hasattr(obj, "__path__"):
        names.update(info.name for info in pkgutil.iter_modules(obj.__path__))
    return names


def _top_level(project_root: Path) -> Iterable[str]:
    names = {info.name for info in pkgutil.iter_modules([str(project_root)])}
    names.update(n for n in list(sys.modules) if "." not in n and not n.startswith("_"))
    return names


def dotted_candidates(word: str, project_root: Path) -> list[str]:
    """Full dotted names that complete `word` (e.g. "pricing.ca" -> ["pricing.cart"])."""
    head, dot, tail = word.rpartition(".")
    if not dot:
        pool: Iterable[str] = _top_level(project_root)
    else:
        if head.split(".")[0] not in sys.modules:
            try:
                importlib.import_module(head.split(".")[0])
            except Exception:
                return []
        pool = _children(head)
    found = sorted(
        n for n in pool if n.startswith(tail) and (tail.startswith("_") or not n.startswith("_"))
    )
    return [f"{head}.{n}" if dot else n for n in found]


class ChatCompleter(Completer):
    """Slash commands at the start of the input; dotted paths elsewhere."""

    def __init__(self, commands: Mapping[str, str] | Iterable[str], project_root: Path) -> None:
        described = commands if isinstance(commands, Mapping) else dict.fromkeys(commands, "")
        self.commands = dict(sorted(described.items()))
        """Command name -> the description shown next to it in the completion menu."""
        self.project_root = project_root

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for name, text in self.commands.items():
                if name.startswith(before):
                    yield Completion(name, start_position=-len(before), display_meta=text)
            return
        match = _DOTTED.search(before)
        if match is None or (match.group(0).count(".") == 0 and len(match.group(0)) < 2):
            return
        word = match.group(0)
        for name in dotted_candidates(word, self.project_root)[:200]:
            yield Completion(name, start_position=-len(word))


def _bindings() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("enter")
    def _submit(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    return keys


def make_prompt_session(
    project_root: Path, commands: Mapping[str, str] | Iterable[str]
) -> PromptSession[str]:
    """A prompt with history in `<project>/.liveforge/chat_history` and completion."""
    folder = state_folder(project_root)
    return PromptSession(
        history=FileHistory(str(folder / "chat_history")),
        completer=ChatCompleter(commands, project_root),
        complete_while_typing=False,
        multiline=True,
        key_bindings=_bindings(),
        prompt_continuation=lambda width, line, wrap: "." * (width - 1) + " ",
    )
