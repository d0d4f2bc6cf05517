"""The status line while the model works: what is awaited, for how long, tokens so far.

`WaitLine` is a rich renderable drawn anew at every refresh of the spinner (or of the live
answer it sits under), so the clock and the counts move even when no event arrives — while
the model thinks, or streams a long tool call that shows nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text

from liveforge.declarations.turn import ModelProgress

__all__ = ["WaitLine", "describe_progress"]

Progress = Callable[[], "ModelProgress | None"]


def describe_progress(progress: ModelProgress) -> str:
    """`~152 tokens out · 4,512 in`: output so far (~ while estimated), input once reported."""
    out = progress.output_tokens
    text = f"{'~' if progress.estimated and out else ''}{out:,} token{'' if out == 1 else 's'} out"
    if progress.input_tokens:
        text += f" · {progress.input_tokens:,} in"
    return text


class WaitLine:
    """`label 3.2s · ~152 tokens out · 4,512 in`, read from `progress()` at each refresh.

    The clock counts from the request's start when one is in flight, else from when the
    line was made (a tool running, a compaction)."""

    def __init__(self, label: str, progress: Progress | None = None) -> None:
        self.label = label
        self.progress = progress
        self.started = time.monotonic()

    def plain(self) -> str:
        """The line as text."""
        current = self.progress() if self.progress is not None else None
        if current is None or not (current.output_tokens or current.input_tokens):
            started = current.started if current is not None else self.started
            return f"{self.label} {time.monotonic() - started:.1f}s"  # no tokens yet
        return f"{self.label} {current.elapsed:.1f}s · {describe_progress(current)}"

    def __rich__(self) -> Text:
        return Text(self.plain(), style="dim")
