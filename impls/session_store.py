"""`Session` bodies: the JSONL transcript — create, append, replay on open, list.

Each record is one line of JSON, written and flushed at once (a killed process loses at most
the line being written; a torn last line is skipped on open). Known secret values are
replaced by "[redacted]" in the line before it is written. Changes and their re-application
on resume live in `session_changes`, the turn lock in `session_lock`.
"""

from __future__ import annotations

import json
import os
import secrets as _random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import forwardpy
from pydantic import ValidationError

from liveforge.declarations.messages import Message, ToolResultBlock, Usage
from liveforge.declarations.session import (
    ChangeRecord,
    Session,
    SessionBusy,
    SessionError,
    SessionInfo,
    SessionState,
    sessions_dir,
)
from liveforge.impls.providers.pairing import CANCELLED_RESULT
from liveforge.kernel.boundary._secrets import MIN_SECRET, REDACTED, Scrubber
from liveforge.kernel.files._statefolder import make_parent

__all__ = [
    "REDACTED",
    "close_transcript",
    "estimate_tokens",
    "fork_transcript",
    "read_session",
    "scrub_text",
    "secret_values",
    "sessions_dir",
    "write_record",
]


_CHARS_PER_TOKEN = 3.5


def estimate_tokens(message: Message) -> int:
    """A size estimate from characters, used when no compactor gave one."""
    size = sum(len(json.dumps(block.model_dump(mode="json"))) for block in message.content)
    return int(size / _CHARS_PER_TOKEN) + 4


def secret_values(secrets: list[str]) -> list[str]:
    """The values worth scrubbing, longest first (so no secret is half-replaced)."""
    return sorted({s for s in secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)


def scrub_text(text: str, secrets: list[str]) -> str:
    """`text` with every value of `secrets` replaced by REDACTED, in every encoding a
    program might print it in (repr and JSON escapes, URL-encoding, base64, hex)."""
    return Scrubber.of(secrets).text(text)


def _new_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + _random.token_hex(3)


def _blank(root: Path, session_id: str, secrets: list[str] | None) -> Session:
    path = sessions_dir(root) / f"{session_id}.jsonl"
    return Session(
        id=session_id,
        root=root,
        path=path,
        title="",
        messages=[],
        tokens=[],
        last_usage=None,
        usage_at=0,
        changes=[],
        turns=0,
        secrets=secret_values(secrets or []),
        created=time.time(),
    )


def _handle(session: Session) -> IO[str]:
    handle = session.live.transcript
    if handle is None or handle.closed:
        handle = session.live.transcript = session.path.open("a", encoding="utf-8")
    return handle


def close_transcript(session: Session) -> None:
    """Close the transcript file handle (the next write opens it again)."""
    handle, session.live.transcript = session.live.transcript, None
    if handle is not None:
        handle.close()


def write_record(session: Session, kind: str, **data: Any) -> None:
    """Append one scrubbed record to the transcript and flush it."""
    line = json.dumps({"t": kind, "at": round(time.time(), 3), **data}, ensure_ascii=False)
    handle = _handle(session)
    handle.write(session.scrub(line) + "\n")
    handle.flush()


@forwardpy.impl(Session.create)
def create(
    root: str | Path, *, secrets: list[str] | None = None, session_id: str | None = None
) -> Session:
    root = Path(root).resolve()
    session = _blank(root, session_id or _new_id(), secrets)
    try:
        make_parent(session.path)
        if session.path.exists():
            raise SessionError(
                f"session {session.id} already exists at {session.path}; "
                "open it instead, or pick another id.",
                session_id=session.id,
                path=str(session.path),
            )
    except OSError as exc:
        raise SessionError(
            f"cannot create the session folder {session.path.parent}: {exc}", path=str(session.path)
        ) from exc
    write_record(
        session,
        "header",
        id=session.id,
        root=str(root),
        version=_version(),
        created=session.created,
    )
    return session


def _version() -> str:
    from liveforge.kernel import __version__

    return __version__


@forwardpy.impl(Session.open)
def open_(root: str | Path, session_id: str, *, secrets: list[str] | None = None) -> Session:
    root = Path(root).resolve()
    if session_id == "latest":
        session_id = _latest(root)
    session = _blank(root, session_id, secrets)
    _require_file(session)
    _refuse_if_running(root, session_id)
    replay(session, _read_records(session.path))
    session.epoch += 1
    write_record(session, "open", epoch=session.epoch)
    _close_interrupted(session)
    return session


def read_session(root: str | Path, session_id: str) -> Session:
    """A session (`"latest"`: the most recently written) as its transcript holds it, for
    looking only: nothing is written (no new epoch, interrupted turns left as they are), so
    a chat running in it is not disturbed."""
    root = Path(root).resolve()
    if session_id == "latest":
        session_id = _latest(root)
    session = _blank(root, session_id, None)
    _require_file(session)
    replay(session, _read_records(session.path))
    return session


def _require_file(session: Session) -> None:
    if not session.path.is_file():
        own = [r for r in Session.list_sessions(session.root) if not r.parent]
        known = ", ".join(r.id for r in own[:5]) or "none"
        raise SessionError(
            f"no session {session.id!r} in {sessions_dir(session.root)}; recent: {known}.",
            session_id=session.id,
            path=str(session.path),
        )


def _refuse_if_running(root: Path, session_id: str) -> None:
    """SessionBusy while another front end is in a turn of this session: opening it would
    mark that live turn interrupted and answer its running tool calls as cancelled."""
    from liveforge.impls.session_lock import running

    pid, sessions = running(root)
    if session_id in sessions:
        raise SessionBusy(str(root), pid, session_id)


def _latest(root: Path) -> str:
    """The id of the most recently written session, a sub-agent's left out (a sub-agent
    cancelled as its parent's run ends writes last; `latest` means the user's session)."""
    folder = sessions_dir(root)
    paths = list(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not paths:
        raise SessionError(
            f"no sessions in {folder} yet: a chat, a `run` or an agent's first turn starts one.",
            path=str(folder),
        )
    paths.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return next((p for p in paths if not _is_subagents(p)), paths[0]).stem


def _is_subagents(path: Path) -> bool:
    """Whether a transcript is a sub-agent's: a `parent` note follows its header."""
    try:
        with path.open(encoding="utf-8") as handle:
            head = [line for line, _ in zip(handle, range(3), strict=False)]
    except OSError:
        return False
    for line in head:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (
            isinstance(record, dict)
            and record.get("t") == "note"
            and record.get("what") == "parent"
        ):
            return True
    return False


def _read_records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line from a killed process: that step was in flight
            if isinstance(record, dict):
                yield record


def replay(session: Session, records: Iterator[dict[str, Any]]) -> None:
    """Rebuild a session's state from its transcript records."""
    by_key: dict[str, ChangeRecord] = {}
    for record in records:
        kind = record.get("t")
        if kind == "header":
            session.created = float(record.get("created", record.get("at", 0.0)))
        elif kind == "message":
            session.messages.append(Message.model_validate(record["message"]))
            session.tokens.append(int(record.get("tokens", 0)))
        elif kind == "amend" and session.messages:
            session.messages[-1] = Message.model_validate(record["message"])
            session.tokens[-1] = estimate_tokens(session.messages[-1])
        elif kind == "usage":
            session.last_usage = Usage.model_validate(record["usage"])
            session.usage_at = int(record.get("messages", 0))
        elif kind == "compaction":
            session.messages = [Message.model_validate(m) for m in record["messages"]]
            session.tokens = [int(t) for t in record["tokens"]]
            session.last_usage, session.usage_at = None, 0
        elif kind == "open":
            session.epoch = int(record.get("epoch", session.epoch))
        else:
            _replay_other(session, kind, record, by_key)


def _replay_other(
    session: Session, kind: Any, record: dict[str, Any], by_key: dict[str, ChangeRecord]
) -> None:
    if kind == "change":
        change = ChangeRecord.model_validate(record["change"])
        by_key[change.key] = change
        session.changes.append(change)
    elif kind == "status" and record.get("key") in by_key:
        by_key[record["key"]].status = str(record["status"])
    elif kind == "confirmed":
        for key in record.get("keys", []):
            if key in by_key:
                by_key[key].confirmed = True
    elif kind == "turn":
        if record.get("event") == "started":
            session.turns = int(record.get("turn", session.turns + 1))
            session.open_turn = True
        else:
            session.open_turn = False
    elif kind == "title":
        session.title = str(record.get("title", ""))
    elif kind == "file_step":
        session.live.file_steps[str(record["key"])] = dict(record["step"])
    elif kind == "file_step_gone":
        session.live.file_steps.pop(str(record.get("key")), None)


def _close_interrupted(session: Session) -> None:
    """A crash mid-step can leave tool calls unanswered; answer them so requests stay valid."""
    if session.open_turn:
        session.note(
            "interrupted",
            "the previous turn was interrupted (the process ended "
            "during it); its last step was lost",
        )
        session.turn_ended("interrupted")
    if session.messages and session.messages[-1].role == "assistant":
        calls = session.messages[-1].tool_calls
        if calls:
            session.append(
                Message.tool_results(
                    [
                        ToolResultBlock(tool_use_id=c.id, content=CANCELLED_RESULT, is_error=True)
                        for c in calls
                    ]
                )
            )


@forwardpy.impl(Session.append)
def append(self: Session, message: Message, *, tokens: int | None = None) -> None:
    count = estimate_tokens(message) if tokens is None else tokens
    write_record(self, "message", message=message.model_dump(mode="json"), tokens=count)
    self.messages.append(message)
    self.tokens.append(count)


@forwardpy.impl(Session.amend_last)
def amend_last(self: Session, message: Message) -> None:
    if not self.messages:
        raise SessionError("there is no message to amend yet.", session_id=self.id)
    write_record(self, "amend", message=message.model_dump(mode="json"))
    self.messages[-1] = message
    self.tokens[-1] = estimate_tokens(message)


@forwardpy.impl(Session.record_usage)
def record_usage(self: Session, usage: Usage) -> None:
    write_record(
        self, "usage", usage=usage.model_dump(mode="json"), messages=len(self.messages) - 1
    )
    self.last_usage, self.usage_at = usage, len(self.messages) - 1


@forwardpy.impl(Session.replace_messages)
def replace_messages(
    self: Session, messages: list[Message], tokens: list[int], summary: dict[str, Any]
) -> None:
    write_record(
        self,
        "compaction",
        messages=[m.model_dump(mode="json") for m in messages],
        tokens=tokens,
        **summary,
    )
    self.messages, self.tokens = list(messages), list(tokens)
    self.last_usage, self.usage_at = None, 0


@forwardpy.impl(Session.note)
def note(self: Session, kind: str, text: str, **data: Any) -> None:
    write_record(self, "note", what=kind, text=text, **data)


@forwardpy.impl(Session.turn_started)
def turn_started(self: Session, user_input: str) -> int:
    self.turns += 1
    self.open_turn = True
    write_record(self, "turn", event="started", turn=self.turns, pid=os.getpid())
    if not self.title:
        self.title = " ".join(user_input.split())[:80]
        write_record(self, "title", title=self.title)
    return self.turns


@forwardpy.impl(Session.turn_ended)
def turn_ended(self: Session, reason: str) -> None:
    self.open_turn = False
    write_record(self, "turn", event="ended", turn=self.turns, reason=reason)


@forwardpy.impl(Session.scrub)
def scrub(self: Session, text: str) -> str:
    return scrub_text(text, self.secrets)


@forwardpy.impl(Session.context_tokens)
def context_tokens(self: Session) -> int:
    if self.last_usage is not None and self.usage_at < len(self.messages):
        anchor = self.last_usage.total_input_tokens + self.last_usage.output_tokens
        return anchor + sum(self.tokens[self.usage_at + 1 :])
    return sum(self.tokens)


@forwardpy.impl(Session.info)
def info(self: Session) -> SessionInfo:
    from liveforge.impls.session_lock import holder

    pid, held_session = holder(self.root)
    running = self.open_turn and held_session == self.id
    state: SessionState = "running" if running else ("interrupted" if self.open_turn else "idle")
    updated = self.path.stat().st_mtime if self.path.exists() else self.created
    return SessionInfo(
        id=self.id,
        title=self.title or "(no turns yet)",
        created=self.created,
        updated=updated,
        state=state,
        turns=self.turns,
        messages=len(self.messages),
        unpersisted=len(self.unpersisted()),
        path=str(self.path),
        holder_pid=pid if running else None,
    )


@forwardpy.impl(Session.list_sessions)
def list_sessions(root: str | Path) -> list[SessionInfo]:
    folder = sessions_dir(root)
    rows = []
    for path in folder.glob("*.jsonl") if folder.is_dir() else []:
        session = _blank(Path(root).resolve(), path.stem, None)
        parent: list[str] = []
        try:
            replay(session, _noting_parent(_read_records(path), parent))
        except (ValidationError, KeyError, TypeError, ValueError) as exc:
            session.title = f"(unreadable transcript: {type(exc).__name__})"
        info = session.info()
        rows.append(info.model_copy(update={"parent": parent[0]}) if parent else info)
    return sorted(rows, key=lambda r: r.updated, reverse=True)


def _noting_parent(
    records: Iterator[dict[str, Any]], parent: list[str]
) -> Iterator[dict[str, Any]]:
    """`records` as they are; a sub-agent's link to its parent session goes to `parent`."""
    for record in records:
        if record.get("t") == "note" and record.get("what") == "parent":
            parent.append(str(record.get("parent_session", "")))
        yield record


_NOT_FORKED = {"header", "file_step", "file_step_gone"}
_CHANGE_RECORDS = {"change", "status", "confirmed"}


def fork_transcript(root: str | Path, session_id: str, *, changes: bool = True) -> str:
    """A new session of the project at `root` whose transcript starts as a copy of session
    `session_id`'s: its whole conversation (compactions included), title and turns; with
    `changes`, its unpersisted changes too (opening the copy re-applies them, as a resume
    does). Files its code wrote stay undoable in the original only. Nothing is written to
    the original. Returns the new session's id.

    Raises `SessionError` for an unknown id, `SessionBusy` while another front end is in a
    turn of that session (the copy would end mid-turn)."""
    root = Path(root).resolve()
    source = _blank(root, session_id, None)
    _require_file(source)
    _refuse_if_running(root, session_id)
    records = list(_read_records(source.path))
    fork = Session.create(root)
    try:
        handle = _handle(fork)
        for record in records:
            kind = record.get("t")
            if kind in _NOT_FORKED or (not changes and kind in _CHANGE_RECORDS):
                continue
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        text = f"forked from session {session_id}"
        write_record(fork, "note", what="forked", text=text, source=session_id)
    except BaseException:
        close_transcript(fork)
        fork.path.unlink(missing_ok=True)  # no half copy left behind
        raise
    close_transcript(fork)
    return fork.id
