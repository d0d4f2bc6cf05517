"""Terminal rendering of agent events: streamed markdown, compact tool lines, coloured diffs.

One `Renderer` serves the chat, `run -p` and the demo. Text streams into a live markdown
view (code blocks syntax-highlighted); every other event ends the stream and prints one
compact line (or a diff for a patch). Between events a spinner says what is being waited
for — the model, or a tool such as a sandbox run — with the elapsed time and, for the model,
the tokens so far; under streaming text the same line stays at the bottom. On a
non-terminal output (a pipe, a log) nothing animates and the final text is printed once; the
status line then goes to the status console (standard error) when that is a terminal.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.status import Status
from rich.syntax import Syntax
from rich.text import Text

from liveforge.cli.turns._cost import describe_usage
from liveforge.cli.turns._lifecycle import check_line
from liveforge.cli.turns._stream_view import StreamView
from liveforge.cli.turns._waiting import Progress, WaitLine
from liveforge.declarations import agent as ev
from liveforge.declarations.messages import Usage

__all__ = ["Renderer", "short_arguments"]

_ARG_WIDTH = 48
_REPORTED_RUNS = frozenset({"verify", "run_tests"})
"""Tools whose sandbox runs arrive as their own `VerificationResult` events."""
_SHELL_TOOLS = frozenset({"exec", "process"})
"""Tools whose output and written files are shown under their line."""


def short_arguments(arguments: dict[str, Any]) -> str:
    """Tool arguments on one short line: multi-line values shown as their line count."""
    parts = []
    for key, value in arguments.items():
        if isinstance(value, str) and "\n" in value:
            shown = f"<{value.count(chr(10)) + 1} lines>"
        else:
            shown = repr(value)
            if len(shown) > _ARG_WIDTH:
                shown = shown[: _ARG_WIDTH - 1] + "…"
        parts.append(f"{key}={shown}")
    return ", ".join(parts)


class Renderer:
    """Draws one agent event at a time on `console`; `close()` stops any animation."""

    def __init__(
        self,
        console: Console,
        *,
        model: str = "",
        status: Console | None = None,
        runs: Callable[[str], Any] | None = None,
    ) -> None:
        self.console = console
        self.runs = runs
        """Looks a sandbox run up by id, so its line can show the value or failing tests."""
        self.status_console = status or console
        """Where the token line goes (`run` keeps it off standard output)."""
        self.progress: Progress | None = None
        """The model request in flight, for the status line (`drive_turn` sets it)."""
        self.model = model
        self.total = Usage()
        self.last_turn = Usage()
        self._text = ""
        self._streamed = False
        self._live: StreamView | None = None
        self._status: Status | None = None
        self._label = ""

    # -- animation --------------------------------------------------------------------------

    def busy(self, label: str) -> None:
        """Show a spinner with `label`, the time and the tokens so far until the next output
        (on the output when it is a terminal, else on the status console when that is)."""
        self.close()
        self._label = label
        target = self.console if self.console.is_terminal else self.status_console
        if target.is_terminal:
            self._status = target.status(WaitLine(label, self.progress), spinner="dots")
            self._status.start()

    def close(self) -> None:
        """Finish the streamed text and stop the spinner."""
        if self._live is not None:
            self._live.close()
            self._live = None
        elif self._text:  # not a terminal: the text is printed once, when complete
            self.console.print(Markdown(self._text))
        self._text = ""
        if self._status is not None:
            self._status.stop()
            self._status = None
        self._label = ""

    # -- events -----------------------------------------------------------------------------

    def event(self, event: Any) -> None:
        """Render one agent event."""
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)

    def _on_turn_started(self, event: ev.TurnStarted) -> None:
        self._streamed = False
        self.busy("waiting for the model…")

    def _on_text_delta(self, event: ev.TextDelta) -> None:
        if self._live is None and not self._text:
            if self.console.is_terminal:
                self.close()
                self._live = StreamView(self.console, WaitLine("answering…", self.progress))
            else:
                self.busy("answering…")
        self._streamed = True
        if self._live is not None:
            self._live.add(event.text)
        else:
            self._text += event.text

    def _on_thinking(self, event: ev.Thinking) -> None:
        if self._live is None and not self._text and self._label != "thinking…":
            self.busy("thinking…")

    def _on_tool_started(self, event: ev.ToolStarted) -> None:
        self.close()
        line = Text("● ", style="cyan")
        line.append(event.name, style="bold cyan")
        line.append(f"({short_arguments(event.arguments)})", style="cyan")
        self.console.print(line)
        self.busy(f"running {event.name}…")

    def _on_tool_finished(self, event: ev.ToolFinished) -> None:
        self.close()
        lines = event.summary.strip().splitlines()
        if event.name in _SHELL_TOOLS and lines and lines[0].startswith("$ "):
            lines = lines[1:]  # the call's line shows the command already
        first = lines[0] if lines else ""
        if event.name in _REPORTED_RUNS and not event.is_error:
            first = ""  # a verification line with the run's headline follows
        mark, style = ("✗", "red") if event.is_error else ("✓", "green")
        line = Text(f"  {mark} ", style=style, no_wrap=True, overflow="ellipsis")
        line.append(f"{event.name} {event.duration:.2f}s", style="dim")
        if first:
            line.append(f"  {first[:100]}", style="red" if event.is_error else "dim")
        self.console.print(line, no_wrap=True, overflow="ellipsis")
        if event.name in _SHELL_TOOLS:
            self._shell_output(lines[1:])
        self.busy("waiting for the model…")

    def _shell_output(self, lines: list[str]) -> None:
        """A command's files line and the first lines of its output, under its tool line."""
        for text in lines:
            style = "yellow" if text.startswith("files: ") else "dim"
            self.console.print(Text(f"    {text}", style=style), no_wrap=True, overflow="ellipsis")

    def _on_patch_applied(self, event: ev.PatchApplied) -> None:
        self.close()
        who = " (agent's own code, applies at the next step)" if event.self_patch else ""
        self.console.print(
            Text(
                f"  patch {event.change_id} {event.kind} {event.target}{who}", style="bold magenta"
            )
        )
        if event.diff.strip():
            self.console.print(
                Syntax(
                    event.diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"
                )
            )

    def _on_verification(self, event: ev.VerificationResult) -> None:
        self.close()
        style = "green" if event.ok else "red"
        line = f"{'✓' if event.ok else '✗'} {event.headline}"
        if self.runs is not None:
            with contextlib.suppress(Exception):  # a pruned record: the headline still says it
                line = check_line(self.runs(event.run_id))
        self.console.print(Text(f"  {line}", style=style))

    def _on_self_patches_applied(self, event: ev.SelfPatchesApplied) -> None:
        self._line(
            f"self-patches {', '.join(event.change_ids)}: {event.message}",
            "magenta" if event.ok else "red",
        )

    def _on_self_patches_rolled_back(self, event: ev.SelfPatchesRolledBack) -> None:
        self._line(
            f"self-patches {', '.join(event.change_ids)} rolled back: {event.reason}"
            + "".join(f"\n  note: {n}" for n in event.notes),
            "yellow",
        )

    def _on_compacted(self, event: ev.Compacted) -> None:
        self._line(
            f"compacted {event.messages_summarised} messages: "
            f"~{event.tokens_before:,} → ~{event.tokens_after:,} tokens",
            "dim",
        )

    def _on_notice(self, event: ev.Notice) -> None:
        self._line(f"· {event.text}", "dim yellow")

    def _on_error(self, event: ev.ErrorEvent) -> None:
        self._line(f"error ({event.error_type}): {event.message}", "bold red")

    def _on_final_answer(self, event: ev.FinalAnswer) -> None:
        self.close()
        if not self._streamed and event.text.strip():
            self.console.print(Markdown(event.text))

    def _on_turn_limit(self, event: ev.TurnLimit) -> None:
        self._line(f"stopped: the turn used its {event.steps} steps", "yellow")

    def _on_runaway(self, event: ev.Runaway) -> None:
        self._line(
            f"stopped: {event.name} was called {event.repeats} times with the same arguments",
            "yellow",
        )

    def _on_cancelled(self, event: ev.Cancelled) -> None:
        self._line("turn cancelled; the session continues", "yellow")

    def _on_turn_ended(self, event: ev.TurnEnded) -> None:
        self.close()
        self.last_turn = event.usage
        self.total = self.total + event.usage
        self.status_console.print(
            Text(
                describe_usage(self.model, event.usage, self.total, event.context_tokens),
                style="dim",
            )
        )

    def _line(self, text: str, style: str) -> None:
        self.close()
        self.console.print(Text(text, style=style))
