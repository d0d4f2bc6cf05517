"""Streaming markdown into a terminal without repeating lines.

A live view redraws its whole content at each refresh by moving the cursor up; once the
content is taller than the screen, the lines that scrolled away cannot be reached and every
redraw prints them again (rich's `vertical_overflow="visible"`), so a long answer — or the
partial one left by Ctrl-C — appears many times in the scrollback. `StreamView` keeps only
the last few rendered lines live and prints the lines above them once, for good, as the
text grows (the way aider's markdown stream does). Lines that far up no longer change as
more text arrives, except in rare markdown (a table still growing), which then shows as
first rendered.
"""

from __future__ import annotations

import time

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

__all__ = ["StreamView"]

_RENDER_EVERY = 0.08
"""Seconds between renders of the growing text (a render is the whole text so far)."""


class StreamView:
    """The answer streaming on `console` (a terminal), `footer` (a status line) under it."""

    def __init__(self, console: Console, footer: RenderableType | None = None) -> None:
        self.console = console
        self.footer = footer
        self.text = ""
        self.printed = 0
        """Rendered lines printed above the live part (final)."""
        self.window = max(3, console.size.height // 2)
        """Lines kept live: well under the screen's height, so a redraw reaches them all."""
        self._rendered_at = 0.0
        self._live = Live(
            self._view([]),
            console=console,
            refresh_per_second=12,
            vertical_overflow="crop",
        )
        self._live.start()

    def add(self, text: str) -> None:
        """Append streamed text; the view follows at most every `_RENDER_EVERY` seconds."""
        self.text += text
        if time.monotonic() - self._rendered_at >= _RENDER_EVERY:
            self._render(keep=self.window)

    def close(self) -> None:
        """Print what is left of the text once and end the live part."""
        self._render(keep=0)
        self._live.update(Group())
        self._live.stop()

    def _render(self, *, keep: int) -> None:
        self._rendered_at = time.monotonic()
        lines = self._lines()
        stable = max(self.printed, len(lines) - keep)
        for line in lines[self.printed : stable]:
            self._live.console.print(line, crop=False, soft_wrap=True)
        self.printed = stable
        self._live.update(self._view(lines[stable:]))

    def _lines(self) -> list[Text]:
        """The text rendered as markdown, one `Text` per screen line."""
        options = self.console.options
        rendered = self.console.render_lines(Markdown(self.text), options, pad=False)
        return [Text.assemble(*((s.text, s.style or "") for s in line)) for line in rendered]

    def _view(self, lines: list[Text]) -> RenderableType:
        parts: list[RenderableType] = [*lines]
        if self.footer is not None:
            parts.append(self.footer)
        return Group(*parts)
