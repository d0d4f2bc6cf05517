"""Token counts and an estimated cost, for the chat's status line.

Prices are US dollars per million tokens as published by the vendors; a model not listed
here shows tokens only (local models cost nothing, so they show no cost either).
"""

from __future__ import annotations

import json
from pathlib import Path

from liveforge.declarations.messages import Usage

__all__ = ["PRICES", "cost", "describe_usage", "transcript_usage"]

PRICES: dict[str, tuple[float, float, float, float]] = {
    # model-name prefix: (input, output, cache read, cache write) per million tokens
    "claude-opus-4": (15.0, 75.0, 1.5, 18.75),
    "claude-sonnet-4": (3.0, 15.0, 0.3, 3.75),
    "claude-3-7-sonnet": (3.0, 15.0, 0.3, 3.75),
    "claude-3-5-haiku": (0.8, 4.0, 0.08, 1.0),
    "claude-haiku-4": (1.0, 5.0, 0.1, 1.25),
    "gpt-4o-mini": (0.15, 0.6, 0.075, 0.0),
    "gpt-4o": (2.5, 10.0, 1.25, 0.0),
    "gpt-4.1-mini": (0.4, 1.6, 0.1, 0.0),
    "gpt-4.1": (2.0, 8.0, 0.5, 0.0),
    "o4-mini": (1.1, 4.4, 0.275, 0.0),
}


def cost(model: str, usage: Usage) -> float | None:
    """Estimated dollars for `usage` on `model` ("provider:model" or bare); None if unknown."""
    name = model.partition(":")[2] or model
    for prefix in sorted(PRICES, key=len, reverse=True):
        if name.startswith(prefix):
            price_in, price_out, price_read, price_write = PRICES[prefix]
            return (
                usage.input_tokens * price_in
                + usage.output_tokens * price_out
                + usage.cache_read_tokens * price_read
                + usage.cache_write_tokens * price_write
            ) / 1_000_000
    return None


def describe_usage(model: str, turn: Usage, total: Usage, context_tokens: int) -> str:
    """One line: this turn's tokens, the session's, the context size and the cost."""
    line = (
        f"tokens: {turn.total_input_tokens:,} in / {turn.output_tokens:,} out this turn"
        f" · session {total.total_input_tokens:,} in / {total.output_tokens:,} out"
        f" · context ~{context_tokens:,}"
    )
    dollars = cost(model, total)
    return line + (f" · ~${dollars:.4f}" if dollars is not None else "")


def transcript_usage(path: Path) -> Usage:
    """Tokens of every model request recorded in a session transcript (a resumed chat's
    session totals start there)."""
    total = Usage()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return total
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:  # a line cut short by a crash
            continue
        if isinstance(record, dict) and record.get("t") == "usage" and "usage" in record:
            total = total + Usage.model_validate(record["usage"])
    return total
