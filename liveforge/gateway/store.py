"""The gateway's durable state in SQLite: sessions, runs (with their queue) and idempotency keys.

One file per project, `.liveforge/gateway.db`, written in WAL mode so a crash loses at most
the transaction in flight. A run is `queued`, `running`, or ended (`done`, `aborted`,
`interrupted`, `failed`). At start-up `recover()` marks runs that were running when the last
gateway died as `interrupted` (their session can go on: the next run resumes the transcript)
and hands back the queued ones, in order, so nothing queued is lost by a restart. An ended
run keeps the tool calls that were refused and those that ran and failed (JSON lists); a
database from before those columns gains them when it is opened.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from liveforge.kernel.files._statefolder import make_parent

__all__ = ["GatewayStore", "RunRow", "SessionRow"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    name TEXT PRIMARY KEY,
    created REAL NOT NULL,
    agent_session TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL REFERENCES sessions(name),
    idem TEXT NOT NULL DEFAULT '',
    input TEXT NOT NULL,
    status TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    reason TEXT NOT NULL DEFAULT '',
    answer TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '',
    refused TEXT NOT NULL DEFAULT '[]',
    tool_errors TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS schedules (
    name TEXT PRIMARY KEY,
    last REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS missed (
    name TEXT NOT NULL,
    count INTEGER NOT NULL,
    first REAL NOT NULL,
    last REAL NOT NULL,
    noted REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS runs_idem ON runs(idem) WHERE idem <> '';
CREATE INDEX IF NOT EXISTS runs_session ON runs(session, created);
"""
ENDED = ("done", "aborted", "interrupted", "failed")
_ADDED_RUN_COLUMNS = {
    "refused": "TEXT NOT NULL DEFAULT '[]'",
    "tool_errors": "TEXT NOT NULL DEFAULT '[]'",
}
"""Columns of `runs` newer than the first gateway databases: added when missing."""


@dataclass(frozen=True)
class SessionRow:
    """A gateway session: its name, the agent transcript it continues, and a title."""

    name: str
    created: float
    agent_session: str
    title: str


@dataclass(frozen=True)
class RunRow:
    """One run as stored."""

    id: str
    session: str
    idem: str
    input: str
    status: str
    priority: int
    created: float
    started: float | None
    ended: float | None
    reason: str
    answer: str
    error: str
    refused: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls that were not run: {tool, call_id, by, reason}."""
    tool_errors: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls that ran and failed: {tool, call_id, by (None), reason}."""

    def public(self) -> dict[str, object]:
        """What clients see of a run."""
        return {
            "run": self.id,
            "session": self.session,
            "status": self.status,
            "input": self.input,
            "created": self.created,
            "started": self.started,
            "ended": self.ended,
            "reason": self.reason,
            "answer": self.answer,
            "error": self.error,
            "refused": self.refused,
            "tool_errors": self.tool_errors,
        }


def _run_row(row: sqlite3.Row) -> RunRow:
    fields = dict(row)
    for name in _ADDED_RUN_COLUMNS:
        fields[name] = json.loads(fields[name])
    return RunRow(**fields)


class GatewayStore:
    """SQLite-backed sessions and runs of one project's gateway."""

    def __init__(self, path: Path) -> None:
        make_parent(path)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Add the columns of `runs` that a database written by an older gateway lacks."""
        for name, kind in _ADDED_RUN_COLUMNS.items():
            have = {row["name"] for row in self._db.execute("PRAGMA table_info(runs)")}
            if name in have:
                continue
            try:
                self._db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as exc:  # another gateway added it meanwhile
                if "duplicate column" not in str(exc):
                    raise

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    # -- sessions ------------------------------------------------------------------------

    def session(self, name: str) -> SessionRow | None:
        """The session called `name`, or None."""
        row = self._db.execute("SELECT * FROM sessions WHERE name = ?", (name,)).fetchone()
        return SessionRow(**row) if row else None

    def ensure_session(self, name: str, title: str) -> SessionRow:
        """The session `name`, created (titled by its first input) when new."""
        self._db.execute(
            "INSERT OR IGNORE INTO sessions(name, created, title) VALUES (?, ?, ?)",
            (name, time.time(), title[:80]),
        )
        found = self.session(name)
        assert found is not None
        return found

    def bind_agent_session(self, name: str, agent_session: str) -> None:
        """Remember the agent transcript a gateway session continues."""
        self._db.execute(
            "UPDATE sessions SET agent_session = ? WHERE name = ?", (agent_session, name)
        )

    def sessions(self) -> list[SessionRow]:
        """Every session, newest first."""
        rows = self._db.execute("SELECT * FROM sessions ORDER BY created DESC").fetchall()
        return [SessionRow(**row) for row in rows]

    # -- runs ----------------------------------------------------------------------------

    def add_run(
        self, session: str, text: str, idem: str, *, priority: int = 0
    ) -> tuple[RunRow, bool]:
        """A new queued run, or (with a known idempotency key) the existing one and True."""
        known = self.by_key(idem)
        if known is not None:
            return known, True
        run_id = f"r-{secrets.token_hex(6)}"
        self._db.execute(
            "INSERT INTO runs(id, session, idem, input, status, priority, created) "
            "VALUES (?, ?, ?, ?, 'queued', ?, ?)",
            (run_id, session, idem, text, priority, time.time()),
        )
        found = self.run(run_id)
        assert found is not None
        return found, False

    def by_key(self, idem: str) -> RunRow | None:
        """The run started with the idempotency key `idem` (None: none, or no key)."""
        if not idem:
            return None
        row = self._db.execute("SELECT * FROM runs WHERE idem = ?", (idem,)).fetchone()
        return _run_row(row) if row else None

    def run(self, run_id: str) -> RunRow | None:
        """The run `run_id`, or None."""
        row = self._db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _run_row(row) if row else None

    def runs(self, session: str | None = None, limit: int = 100) -> list[RunRow]:
        """Recent runs, newest first, of one session or all."""
        if session:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE session = ? ORDER BY created DESC LIMIT ?",
                (session, limit),
            ).fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM runs ORDER BY created DESC LIMIT ?", (limit,)
            ).fetchall()
        return [_run_row(row) for row in rows]

    def start(self, run_id: str) -> None:
        """Mark a run running."""
        self._db.execute(
            "UPDATE runs SET status = 'running', started = ? WHERE id = ?", (time.time(), run_id)
        )

    def finish(
        self,
        run_id: str,
        status: str,
        *,
        reason: str = "",
        answer: str = "",
        error: str = "",
        refused: list[dict[str, Any]] | None = None,
        tool_errors: list[dict[str, Any]] | None = None,
    ) -> None:
        """Mark a run ended with `status` (one of ENDED), with the tool calls that were
        refused and those that ran and failed."""
        if status not in ENDED:
            raise ValueError(f"not an end status: {status!r}")
        self._db.execute(
            "UPDATE runs SET status = ?, ended = ?, reason = ?, answer = ?, error = ?, "
            "refused = ?, tool_errors = ? WHERE id = ?",
            (
                status,
                time.time(),
                reason,
                answer,
                error,
                json.dumps(refused or [], ensure_ascii=False),
                json.dumps(tool_errors or [], ensure_ascii=False),
                run_id,
            ),
        )

    def queued(self) -> list[RunRow]:
        """Queued runs in the order they run: steered first, then oldest first."""
        rows = self._db.execute(
            "SELECT * FROM runs WHERE status = 'queued' ORDER BY priority DESC, created, rowid"
        ).fetchall()
        return [_run_row(row) for row in rows]

    def recover(self) -> tuple[list[RunRow], list[RunRow]]:
        """After a restart: (runs that were running, now interrupted; runs still queued)."""
        rows = self._db.execute("SELECT * FROM runs WHERE status = 'running'").fetchall()
        interrupted = [_run_row(row) for row in rows]
        for run in interrupted:
            self.finish(
                run.id,
                "interrupted",
                error="the gateway stopped during this run; send the input again to go on",
            )
        return [r for r in (self.run(x.id) for x in interrupted) if r], self.queued()

    # -- schedules -----------------------------------------------------------------------

    def schedule_last(self, name: str) -> float | None:
        """When the schedule `name` was last checked (None: never)."""
        row = self._db.execute("SELECT last FROM schedules WHERE name = ?", (name,)).fetchone()
        return float(row["last"]) if row else None

    def set_schedule_last(self, name: str, when: float) -> None:
        """Remember that `name` was checked up to `when`."""
        self._db.execute(
            "INSERT INTO schedules(name, last) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET last = excluded.last",
            (name, when),
        )

    def add_missed(self, name: str, count: int, first: float, last: float) -> None:
        """Record firings of `name` that fell while the gateway was down."""
        self._db.execute(
            "INSERT INTO missed(name, count, first, last, noted) VALUES (?, ?, ?, ?, ?)",
            (name, count, first, last, time.time()),
        )

    def missed(self) -> list[dict[str, object]]:
        """Every recorded gap, newest first."""
        rows = self._db.execute("SELECT * FROM missed ORDER BY noted DESC").fetchall()
        return [dict(row) for row in rows]
