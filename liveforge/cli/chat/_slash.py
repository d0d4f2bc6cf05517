"""The chat's slash commands: /help /undo /diff /verify /persist /runs /tests /model /compact
/clear /sessions /mcp /quit.

Commands that change or check the program go through the same tools the model uses
(rollback, persist, run_tests), so a person and the agent see the same results.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from liveforge.cli._words import in_chat_words
from liveforge.cli.turns._lifecycle import check_line, not_ready, reasons
from liveforge.cli.turns._render import Renderer
from liveforge.declarations.permissions import approved

__all__ = ["COMMANDS", "ChatState", "dispatch"]


@dataclass
class ChatState:
    """What the slash commands work on: the agent and the terminal."""

    agent: Any
    console: Console
    renderer: Renderer
    project: Path
    model: str
    confirm: Callable[[str], Awaitable[bool]]
    """Asks the person a yes/no question (answers yes at once under --yes)."""
    switch_model: Callable[[str], str]
    """Points the agent at another model; returns its display name."""
    extra: dict[str, Any] = field(default_factory=dict)

    def tool(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run one catalogue tool on the agent's runtime, as the person's own command (the
        permission policy governs the agent, not the person)."""
        with approved():
            result = self.agent.toolbox.call(name, arguments, timeout=None)
        return result.text, result.is_error

    def say(self, text: str, style: str = "") -> None:
        """Print a line of command output (long lines wrap in the terminal, unbroken)."""
        self.console.print(Text(text, style=style), soft_wrap=True)


Handler = Callable[[ChatState, list[str]], Awaitable[bool]]


async def _help(state: ChatState, args: list[str]) -> bool:
    table = Table(show_header=False, box=None, padding=(0, 2))
    for name, (_, text) in COMMANDS.items():
        table.add_row(Text(name, style="bold cyan"), text)
    state.console.print(table)
    state.say(
        "Enter sends; Alt-Enter or a trailing \\ adds a line; Tab completes commands "
        "and dotted paths; Ctrl-C cancels a running turn; Ctrl-D exits.",
        "dim",
    )
    return True


async def _in_thread(state: ChatState, label: str, func: Callable[[], Any]) -> Any:
    state.renderer.busy(label)
    try:
        return await asyncio.to_thread(func)
    finally:
        state.renderer.close()


async def _tool_command(state: ChatState, label: str, name: str, arguments: dict[str, Any]) -> None:
    text, is_error = await _in_thread(state, label, lambda: state.tool(name, arguments))
    state.say(in_chat_words(text), "red" if is_error else "")
    state.agent.session.track(state.agent.runtime)


async def _undo(state: ChatState, args: list[str]) -> bool:
    rt = state.agent.runtime
    if not args and rt.files_are_newest():
        # the last thing done was writing files (a persist, or code run by execute): put
        # the files back first; a persisted change stays in memory, unpersisted again
        done = await _in_thread(state, "restoring the files…", rt.unpersist)
        state.say(done.summary() + "\n(files restored; /undo again undoes the step before)")
        state.agent.session.track(rt)
        return True
    arguments = {"change_id": args[0]} if args else {}
    await _tool_command(state, "rolling back…", "rollback", arguments)
    return True


def _show_diff(state: ChatState, diff: str) -> None:
    if not diff.strip():
        state.say("no unpersisted changes: memory matches the files", "dim")
        return
    state.console.print(
        Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default")
    )


async def _diff(state: ChatState, args: list[str]) -> bool:
    rt = state.agent.runtime
    written = "" if args else rt.file_writes_diff()
    if written:
        state.say("files written by code the agent ran (/undo puts them back):", "bold yellow")
        _show_diff(state, written)
    # files the file tools wrote (undone by /undo too), then memory against the files
    _show_diff(state, rt.diff(args[0] if args else None) + ("" if args else rt.written_diff()))
    return True


async def _persist(state: ChatState, args: list[str]) -> bool:
    force = "--force" in args
    if [a for a in args if a != "--force"]:
        state.say("usage: /persist [--force]", "red")
        return True
    rt = state.agent.runtime
    diff = rt.diff()
    if not diff.strip():
        state.say("nothing to persist: memory matches the files", "dim")
        return True
    held = reasons(not_ready(rt))
    if held and not force:
        state.say("not persisted; these changes are not ready:", "yellow")
        for line in held:
            state.say(f"  {line}", "yellow")
        state.say(
            "check them with /verify CODE or /tests, or write them anyway with /persist --force",
            "yellow",
        )
        return True
    _show_diff(state, diff)
    for line in held:
        state.say(f"writing anyway (--force): {line}", "yellow")
    if not await state.confirm("Write these changes to the files?"):
        state.say("not persisted; the changes stay in memory", "yellow")
        return True
    await _tool_command(state, "persisting…", "persist", {"force": force})
    return True


async def _verify(state: ChatState, args: list[str]) -> bool:
    code = args[0].strip() if args else ""
    if not code:
        state.say(
            "usage: /verify CODE, e.g. /verify from pkg.mod import f; assert f(2) == 4", "red"
        )
        return True
    rt = state.agent.runtime
    result = await _in_thread(state, "verifying in the sandbox…", lambda: rt.verify(code))
    line = check_line(result)
    state.say(line, "green" if result.ok else "red")
    error = result.traceback.rstrip().splitlines()[-1] if result.traceback else ""
    if not result.ok and error and " ".join(error.split()) not in " ".join(line.split()):
        state.say(error, "red")  # the line cut the error short, or named another cause
    state.agent.session.track(rt)
    return True


async def _runs(state: ChatState, args: list[str]) -> bool:
    rt = state.agent.runtime
    if args:
        state.say(rt.run(args[0]).summary())
        return True
    rows = rt.runs()[:15]
    if not rows:
        state.say("no sandbox runs yet", "dim")
    for row in rows:
        state.say(f"{row.run_id}  {row.headline}", "green" if row.ok else "red")
    return True


async def _tests(state: ChatState, args: list[str]) -> bool:
    rt = state.agent.runtime
    label = "running the tests in the sandbox…"
    result = await _in_thread(state, label, lambda: rt.run_tests(args or None))
    state.say(check_line(result), "green" if result.ok else "red")  # /runs RUN_ID shows more
    state.agent.session.track(rt)
    return True


async def _model(state: ChatState, args: list[str]) -> bool:
    if not args:
        state.say(f"model: {state.model}  (switch with /model provider:model)")
        for line in _providers(state.project):
            state.say(line, "dim")
        return True
    state.model = state.switch_model(args[0])
    state.renderer.model = state.model
    state.say(f"model: {state.model}", "green")
    return True


def _providers(project: Path) -> list[str]:
    """One line per provider liveforge knows here: protocol, address, key state."""
    import os

    from liveforge.config import BUILTIN_PROVIDERS, load_config

    try:
        config = load_config(project)
    except Exception as exc:  # a bad configuration is reported, the list is not needed
        return [f"(configuration: {exc})"]
    rows = []
    for name in sorted({*BUILTIN_PROVIDERS, *config.providers}):
        provider = config.provider(name)
        keys = provider.api_key_env
        url = os.environ.get(f"{name.upper().replace('-', '_')}_BASE_URL") or provider.base_url
        if not provider.key_required:
            key = "no key needed"
        elif any(os.environ.get(k) for k in keys):
            key = "key set"
        else:
            key = f"set {' or '.join(keys)}" if keys else "no key configured"
        rows.append((name, provider.protocol, url, f"({key})"))
    lines = ["providers (use as provider:model):"]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for name, protocol, url, key in rows:
        lines.append(f"  {name:<{widths[0]}}  {protocol:<{widths[1]}}  {url:<{widths[2]}}  {key}")
    if config.fallback_models:
        lines.append("fallbacks: " + ", ".join(config.fallback_models))
    return lines


async def _compact(state: ChatState, args: list[str]) -> bool:
    state.renderer.busy("compacting the conversation…")
    try:
        event = await state.agent.compact()
    finally:
        state.renderer.close()
    if event is None:
        state.say("nothing to compact: no summary would make the conversation smaller", "dim")
    else:
        state.renderer.event(event)
    return True


async def _clear(state: ChatState, args: list[str]) -> bool:
    from liveforge.declarations.session import Session
    from liveforge.impls.session_store import close_transcript

    agent, old = state.agent, state.agent.session
    new = Session.create(state.project, secrets=list(old.secrets))
    # the new session records the changes in memory now, so resuming it brings them back
    new.track(agent.runtime, agent.settings.self_packages)
    close_transcript(old)
    agent.session = new
    state.console.clear()
    state.say(
        f"new session {state.agent.session.id} (the old one is kept: "
        f"/sessions, --resume {old.id}); in-memory changes are kept",
        "dim",
    )
    return True


async def _sessions(state: ChatState, args: list[str]) -> bool:
    from liveforge.declarations.session import Session

    current = state.agent.session.id
    every = Session.list_sessions(state.project)
    own = [info for info in every if not info.parent]
    for info in own[:20]:
        mark = "*" if info.id == current else " "
        state.say(
            f"{mark} {info.id}  {info.turns} turns  {info.unpersisted} unpersisted  "
            f"{info.title[:50]}"
        )
    hidden = [f"{len(own) - 20} older"] if len(own) > 20 else []
    if len(every) > len(own):
        hidden.append(f"{len(every) - len(own)} of sub-agents")
    if hidden:
        state.say(f"not shown: {' and '.join(hidden)}", "dim")
    state.say("resume one with: liveforge chat --resume ID", "dim")
    return True


async def _mcp(state: ChatState, args: list[str]) -> bool:
    servers = [s for s in state.agent.toolbox.sources if hasattr(s, "status")]
    if not servers:
        state.say("no MCP servers: list them in .mcp.json (docs/mcp-and-acp.md)", "dim")
    for source in servers:
        await asyncio.to_thread(source.start)  # started now if no turn has yet
        for status in source.status():
            state.say(status.describe(), "red" if status.state == "failed" else "")
        for line in source.config.problems:
            state.say(f"! {line}", "yellow")
    return True


async def _quit(state: ChatState, args: list[str]) -> bool:
    return False


COMMANDS: dict[str, tuple[Handler, str]] = {
    "/help": (_help, "this list"),
    "/undo": (
        _undo,
        "undo the last step: a persist (files back) or a change in memory; "
        "/undo ID rolls back that change and later ones of its module",
    ),
    "/diff": (_diff, "unpersisted changes (memory vs files) and files written, as a diff"),
    "/verify": (_verify, "run CODE in the sandbox with the changes: /verify assert f(2) == 4"),
    "/persist": (
        _persist,
        "write the verified changes to files (asks first); --force writes unverified ones too",
    ),
    "/runs": (_runs, "recent sandbox runs (/runs ID shows one)"),
    "/tests": (_tests, "run the project's tests in the sandbox (/tests -k name ...)"),
    "/model": (
        _model,
        "show the model and the configured providers, or switch (/model ollama:llama3.1)",
    ),
    "/compact": (_compact, "summarise older turns now"),
    "/clear": (_clear, "start a new conversation (keeps the program's state)"),
    "/sessions": (_sessions, "list this project's sessions"),
    "/mcp": (_mcp, "the MCP servers the agent uses: state and tools"),
    "/quit": (_quit, "leave (Ctrl-D also works); the transcript is saved"),
}


RAW_ARGUMENTS = frozenset({"/verify"})
"""Commands whose argument is Python code, passed on as one string."""


async def dispatch(state: ChatState, line: str) -> bool:
    """Run one slash command line; False means the chat should end."""
    name, *rest = line.strip().split(maxsplit=1)
    try:
        # code is taken as written; other commands' arguments as shell words
        args = rest if name in RAW_ARGUMENTS else shlex.split(rest[0] if rest else "")
    except ValueError as exc:
        state.say(f"cannot read that command: {exc}", "red")
        return True
    entry = COMMANDS.get(name)
    if entry is None:
        close = [c for c in COMMANDS if c.startswith(name[:3])]
        state.say(
            f"unknown command {name}; "
            + (f"did you mean {', '.join(close)}? " if close else "")
            + "see /help",
            "red",
        )
        return True
    try:
        return await entry[0](state, args)
    except Exception as exc:  # a command failing must never end the chat
        state.say(in_chat_words(f"{name} failed: {type(exc).__name__}: {exc}"), "red")
        return True
