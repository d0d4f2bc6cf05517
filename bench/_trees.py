"""Another revision of this repository beside the checkout, for before/after tables."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def unpack(ref: str, into: Path) -> Path:
    """`git archive ref` of this repository, unpacked under `into`; run a child with
    `PYTHONPATH` set to it and it imports that revision of liveforge."""
    data = subprocess.run(
        ["git", "-C", str(HERE), "archive", ref], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into, filter="tar")
    return into
