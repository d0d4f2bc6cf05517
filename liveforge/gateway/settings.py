"""The gateway's settings: `[tool.liveforge.gateway]` and `[[tool.liveforge.schedule]]`.

[tool.liveforge.gateway]
approval_timeout = 300            # seconds a question waits before it counts as "deny"
busy = "queue"                    # input for a busy session: "queue" behind it, or "steer"

[tool.liveforge.gateway.telegram]
allowed_users = [123456789]       # Telegram user ids allowed to talk to the bot
token_env = "TELEGRAM_BOT_TOKEN"  # the variable holding the bot token (never the file)

[[tool.liveforge.schedule]]
name = "nightly-tests"
cron = "0 3 * * *"                # minute hour day-of-month month day-of-week
session = "nightly"
input = "Run the test suite and tell me what fails."
deliver = "telegram:123456789"    # a channel's address, or "ui" (the session's watchers)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["GatewaySettings", "ScheduleEntry", "TelegramSettings"]


class TelegramSettings(BaseModel):
    """The Telegram channel (Bot API long polling)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    allowed_users: list[int] = Field(default_factory=list)
    """User ids whose messages start runs; everyone else is ignored."""
    token_env: str = "TELEGRAM_BOT_TOKEN"
    """The environment variable holding the bot token."""
    api_base: str = "https://api.telegram.org"
    """The Bot API's address (a local Bot API server, or a test double)."""
    poll_timeout: int = Field(default=30, ge=0, le=50)
    """Seconds one getUpdates long poll waits."""


class GatewaySettings(BaseModel):
    """`[tool.liveforge.gateway]`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    approval_timeout: float = Field(default=300.0, gt=0)
    """Seconds an approval question waits for an answer before it counts as a refusal."""
    busy: Literal["queue", "steer"] = "queue"
    """What input for a session that is running does: "queue" (wait its turn, behind the
    session's other queued input) or "steer" (stop the running turn, run next). A `run`
    request's `busy` decides for itself; scheduled runs always queue."""
    telegram: TelegramSettings | None = None
    """The Telegram channel; off unless this table exists and the token variable is set."""


class ScheduleEntry(BaseModel):
    """One scheduled run: `input` on `session` whenever `cron` matches (local time)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    cron: str
    session: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    input: str = Field(min_length=1)
    deliver: str = Field(default="ui", pattern=r"^(ui|[a-z][a-z0-9_-]*:\S+)$")
    """Where the run's answer goes: "ui" (the session's watchers) or a channel's address,
    "NAME:WHERE" ("telegram:CHAT_ID")."""

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        from liveforge.gateway.cron import Cron

        Cron(value)  # raises ValueError naming the bad field
        return value
