"""`liveforge chat`: an interactive self-iteration session in the terminal.

The person types; the agent streams its answer, tool calls show as compact lines and
patches as coloured diffs (`liveforge.cli.turns._render`). Input has history, multi-line editing and
completion (`_input`); lines starting with / are commands (`_slash`). Ctrl-C cancels the running
turn and keeps the session; Ctrl-D (or /quit) leaves, and the transcript stays in
`.liveforge/sessions/` for `--resume`. Tool calls follow the permission mode (`--mode`,
`--yes` = full-auto, else `[tool.liveforge.permissions]`, else ask): a call the policy asks
about shows what it will do (a diff, the code) and waits for y / n / a (always, for this
tool in this chat; for a shell command outside the check boundary, for those only).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text

from liveforge.cli._common import (
    ExitCode,
    add_common,
    add_mode,
    chosen_mode,
    examples,
    project_dir,
)
from liveforge.cli.chat._slash import COMMANDS, ChatState, dispatch
from liveforge.cli.checks._cancel import stop_running_checks
from liveforge.cli.turns._agent import (
    add_profile,
    configured_provider,
    drive_turn,
    make_agent,
    model_name,
    policy_of,
)
from liveforge.cli.turns._cost import transcript_usage
from liveforge.cli.turns._lifecycle import memory_only
from liveforge.cli.turns._render import Renderer
from liveforge.declarations.permissions import ApprovalRequest
from liveforge.impls.plugins import end_session
from liveforge.impls.subagents import close_subagents
from liveforge.kernel.errors import LiveforgeError

__all__ = ["ChatApp", "register"]


EXAMPLES_CHAT = """\
  liveforge chat                                  the project in this folder, configured model
  liveforge chat --model ollama:llama3.1          a local model, no key
  liveforge chat --resume                         continue the latest session
"""


def register(commands: Any) -> None:
    """Add `chat` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "chat",
        help="interactive session: talk to the agent about the live program",
        description="An interactive session with the agent on --project. /help lists the "
        "commands; Ctrl-C cancels a turn, Ctrl-D exits.",
        epilog=examples(EXAMPLES_CHAT),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model",
        help="provider:model, e.g. anthropic:claude-sonnet-4-5, "
        "openai:gpt-4o, ollama:llama3.1 (default: configured)",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="ID",
        help="continue a session: its conversation and unpersisted changes "
        "(the latest when no ID is given)",
    )
    add_mode(parser)
    add_profile(parser)
    add_common(parser, json_flag=False)
    parser.set_defaults(handler=_chat)


def _chat(args: argparse.Namespace) -> int:
    project = project_dir(args)
    agent = make_agent(
        project, model=args.model, resume=args.resume, mode=chosen_mode(args), profile=args.profile
    )
    return asyncio.run(ChatApp(agent, project).run())


class ChatApp:
    """The read–run–render loop of one chat."""

    def __init__(
        self,
        agent: Any,
        project: Path,
        *,
        console: Console | None = None,
    ) -> None:
        from liveforge.cli.chat._input import make_prompt_session

        self.agent = agent
        self.project = project
        self.yes = policy_of(agent).mode == "full-auto"
        self.always: set[tuple[str, str]] = set()
        """(tool, effect) answered "always": a yes to commands inside the check boundary is
        not a yes to commands outside it."""
        self.console = console or Console(highlight=False)
        self.renderer = Renderer(
            self.console, model=model_name(agent.provider), runs=agent.runtime.run
        )
        self.renderer.total = transcript_usage(agent.session.path)  # carried over on resume
        self.prompt = make_prompt_session(
            project, {name: text.split(";")[0] for name, (_, text) in COMMANDS.items()}
        )
        self.state = ChatState(
            agent=agent,
            console=self.console,
            renderer=self.renderer,
            project=project,
            model=self.renderer.model,
            confirm=self.confirm,
            switch_model=self.switch_model,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._question: concurrent.futures.Future[bool] | None = None
        agent.toolbox.approver = self._approve_from_worker
        self._warned: list[str] = []

    async def run(self) -> int:
        """Chat until Ctrl-D or /quit; returns the exit code."""
        self._loop = asyncio.get_running_loop()
        self._header()
        try:
            while await self._once():
                pass
        finally:
            await self.agent.aclose()
            close_subagents(self.agent)
            end_session(self.agent)
            self.agent.runtime.close()
        self.console.print(
            Text(f"transcript saved: {self.agent.session.path}", style="dim"), soft_wrap=True
        )
        return ExitCode.OK

    async def _once(self) -> bool:
        try:
            text = (await self.prompt.prompt_async([("bold green", "› ")])).strip()
        except KeyboardInterrupt:
            return True
        except EOFError:
            return not self._may_leave()
        if not text:
            return True
        if text.startswith("/"):
            stay = await self._interruptible(dispatch(self.state, text))
            return stay or not self._may_leave()
        try:
            await drive_turn(self.agent, self.renderer, text)
        except LiveforgeError as exc:  # e.g. another front end holds the project's turn
            self.console.print(Text(f"{type(exc).__name__}: {exc}", style="bold red"))
        except Exception:  # a fault in liveforge: show it, keep the session
            self.console.print_exception(max_frames=8)
            self.console.print(
                Text(
                    "the turn failed inside liveforge (above); the session "
                    "continues: /undo, /diff and /quit still work",
                    style="bold red",
                )
            )
        finally:
            self._close_question()
        return True

    def _may_leave(self) -> bool:
        """True when the chat may end now; the first time changes exist only in memory, say
        so and stay (the same request again leaves)."""
        modules = memory_only(self.agent.runtime)
        if not modules or modules == self._warned:
            return True
        self._warned = modules
        self.console.print(
            Text(
                f"{len(modules)} module(s) changed only in memory: {', '.join(modules)}. "
                "/persist writes them, /diff shows them. Ctrl-D (or /quit) again leaves "
                "anyway; `liveforge chat --resume` brings the changes back.",
                style="bold yellow",
            ),
            soft_wrap=True,
        )
        return False

    async def _interruptible(self, work: Coroutine[Any, Any, bool]) -> bool:
        """Run a slash command; Ctrl-C abandons it and returns to the prompt."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(work)
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        try:
            return await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
            self.renderer.close()
            stopped = stop_running_checks(self.agent.runtime)
            self.console.print(
                Text(
                    "command cancelled" + ("; its sandbox run was stopped" if stopped else ""),
                    style="yellow",
                )
            )
            return True
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    def _header(self) -> None:
        session = self.agent.session
        self.console.print(
            Text.assemble(
                ("liveforge chat", "bold"),
                f" · {self.project} · model {self.renderer.model} · session {session.id}"
                f" · mode {policy_of(self.agent).mode}",
                style="dim",
            ),
            soft_wrap=True,
        )
        for line in session.live.restored:
            self.console.print(Text(f"· resumed: {line}", style="dim yellow"))
        self.console.print(
            Text(
                "/help for commands · Enter sends, Alt-Enter adds a line · "
                "Ctrl-C cancels a turn · Ctrl-D exits",
                style="dim",
            )
        )

    # -- approvals ---------------------------------------------------------------------------

    async def confirm(self, question: str) -> bool:
        """Ask a yes/no question (always yes under --yes; Ctrl-C or Ctrl-D mean no)."""
        if self.yes:
            return True
        self.renderer.close()
        try:
            answer = await self.prompt.prompt_async(
                f"{question} [y/N] ", completer=None, multiline=False
            )
        except (KeyboardInterrupt, EOFError):
            return False
        return answer.strip().lower() in ("y", "yes")

    def _approve_from_worker(self, request: ApprovalRequest) -> bool:
        """The toolbox's approver: called in the agent's tool worker when the policy asks."""
        if (request.tool, request.effect) in self.always:
            return True
        assert self._loop is not None
        self._question = asyncio.run_coroutine_threadsafe(self._ask(request), self._loop)
        try:
            return self._question.result()
        except concurrent.futures.CancelledError:  # the turn ended while the question was open
            return False

    def _close_question(self) -> None:
        """Withdraw a permission question still open when its turn ended (cancelled)."""
        if self._question is not None and not self._question.done():
            self._question.cancel()
        self._question = None

    async def _ask(self, request: ApprovalRequest) -> bool:
        self.renderer.close()
        self.console.print(
            Text(f"The agent wants to run {request.tool} ({request.effect}):", style="bold yellow")
        )
        if request.preview.strip():
            self.console.print(_shown(request))
        try:
            answer = await self.prompt.prompt_async(
                f"Allow {request.tool}? [y]es / [N]o / [a]lways in this chat ",
                completer=None,
                multiline=False,
            )
        except (KeyboardInterrupt, EOFError):
            return False
        choice = answer.strip().lower()
        if choice in ("a", "always"):
            self.always.add((request.tool, request.effect))
        return choice in ("y", "yes", "a", "always")

    # -- model -------------------------------------------------------------------------------

    def switch_model(self, name: str) -> str:
        """Point the agent at model `name` (configured provider settings and keys)."""
        provider, _ = configured_provider(self.project, name)
        old, self.agent.provider = self.agent.provider, provider
        close = getattr(old, "aclose", None)
        if close is not None and self._loop is not None:
            self._loop.create_task(close())
        return model_name(provider)


def _shown(request: ApprovalRequest) -> Syntax | Text:
    """A permission question's preview as the person sees it: diffs and code coloured,
    anything else (a shell command, where and how it runs) as plain text."""
    text = request.preview
    if text.lstrip().startswith(("---", "write")):
        return Syntax(text, "diff", theme="ansi_dark", background_color="default")
    if request.effect in ("execute", "memory"):
        return Syntax(text, "python", theme="ansi_dark", background_color="default")
    return Text(text)
