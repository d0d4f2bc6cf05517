"""Helpers for the command-line tests: run `liveforge` as a child, the sample's fix, real
virtualenvs to run it from."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
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
        if not k.endswith(("_API_KEY", "_API_KEYS", "_BASE_URL"))
        and not k.startswith("LIVEFORGE_")
        # an activated environment other than the test's own would make the child run
        # again inside it (the project's environment, as liveforge looks for one)
        and k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
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
        input=input if input is not None else "",  # never the test worker's own stdin
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(**env),
    )


def make_venv(prefix: Path, path_entries: Sequence[str | Path] = ()) -> Path:
    """A real virtualenv (without pip) at `prefix`; its python. `path_entries` go into a .pth
    file in its site-packages: path entries only, so an editable install living in one of
    them is not activated."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    python = prefix / "bin" / "python"
    if path_entries:
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        lines = "".join(f"{entry}\n" for entry in path_entries)
        Path(purelib, "liveforge_test.pth").write_text(lines)
    return python


def pip_install(python: Path, *args: str) -> None:
    """`pip install --no-deps ARGS` (this environment's pip) into the environment of `python`."""
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
    subprocess.run([*command, *args], check=True, capture_output=True, timeout=300)


def wheel(folder: Path, dist: str, files: dict[str, str]) -> Path:
    """A real wheel of distribution `dist` (version 1.0) holding `files` (built by hand: no
    build backend needed)."""
    import zipfile

    name = dist.replace("-", "_")
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    meta = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    every = {**files, **meta}
    record = "".join(f"{n},,\n" for n in every) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in {**every, f"{info}/RECORD": record}.items():
            archive.writestr(member, text)
    return path
