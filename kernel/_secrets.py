"""Which environment variables hold secrets, so they stay out of sandbox runs and records.

A variable is a secret when its name ends in `_API_KEY`, `_API_KEYS` or `_TOKEN` (the
provider keys liveforge reads) or in `_SECRET`, `_SECRET_KEY`, `_SECRET_ACCESS_KEY` or
`_PASSWORD` (the usual names of other credentials, such as `AWS_SECRET_ACCESS_KEY`).
Sandbox children do not get them: a verification snippet that prints its environment cannot
leak a key into `sandbox_runs/`.
"""

from __future__ import annotations

from collections.abc import Mapping

SECRET_SUFFIXES = (
    "_API_KEY",
    "_API_KEYS",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_SECRET_ACCESS_KEY",
    "_PASSWORD",
)


def is_secret_name(name: str) -> bool:
    """True for environment variable names that hold credentials."""
    return name.upper().endswith(SECRET_SUFFIXES)


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of `env` without the secret variables."""
    return {name: value for name, value in env.items() if not is_secret_name(name)}
