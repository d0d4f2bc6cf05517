"""Helpers for the command-line tests: run `liveforge` as a child, the sample's fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIX = '''def subtotal(self) -> int:
    """The line's price in cents, with the bulk discount from BULK_QUANTITY units."""
    cents = self.unit_cents * self.quantity
    if self.quantity >= BULK_QUANTITY:
        cents -= round(cents * BULK_DISCOUNT)
    return cents
'''
"""The correct `pricing.cart.Line.subtotal` (the sample ships with `>` instead of `>=`)."""


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a `liveforge` child: no model keys, no config from outside."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_API_KEYS", "_BASE_URL")) and not k.startswith("LIVEFORGE_")
    }
    env.update(extra)
    return env


def run_cli(
    *args: str, cwd: Path, input: str | None = None, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run `python -m liveforge ARGS` in `cwd` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "liveforge", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(**env),
    )
