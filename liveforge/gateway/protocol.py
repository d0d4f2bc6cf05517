"""The gateway's WebSocket protocol, version 1: every message a client and the server send.

Messages are JSON objects with a `type`. A client's requests carry an `id`; the server
answers each with one `result` carrying the same `id` (`ok` and `result`, or `error`).
A gateway may serve several projects: requests about one name it in `project` (which a
gateway of one project does not need), and everything the server sends names its project.
Everything else the server sends is unsolicited: `event` (one agent event of a run, numbered
per run by `seq`), `run_status` (queued / running / done / aborted / interrupted / failed)
and `approval` (a question for the client that owns the run; answer with `approve` or
`deny`). The server builds each message from its model here (`server_message`), so what it
sends is what the schema says: every field present, `null` where a result has no value. The
JSON Schema of both directions ships as `protocol-v1.json` beside this module (`schema()`
builds it; a test keeps the file equal to it).

    {"type": "connect", "id": "1", "token": "..."}
    {"type": "run", "id": "2", "session": "main", "input": "fix the bug", "idempotency_key": "k1"}
    {"type": "result", "id": "2", "ok": true, "result": {"run": "r-…", "status": "queued", …},
     "error": null}
    {"type": "event", "project": "shop", "run": "r-…", "session": "main", "seq": 0, "at": …,
     "event": {"type": "text_delta", "text": "…"}}
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "PROTOCOL_REVISION",
    "PROTOCOL_VERSION",
    "ClientMessage",
    "ErrorInfo",
    "ServerMessage",
    "ToolCallOutcome",
    "parse_client",
    "schema",
    "server_message",
    "shipped_schema",
]

PROTOCOL_VERSION = 1
PROTOCOL_REVISION = 5
"""Backward-compatible additions to version 1: 2 added projects (the `project` field,
`projects.list`), `changes.undo` and a session's own `changes.diff`; 3 added `busy` to `run`
and made the schema of server messages name every field as required (they always carry
them); 4 added `changes.list` (a session's changes by module, with their state, last
check and diffs) and each project's `model` in `connect` and `projects.list`; 5 added
`refused` and `tool_errors` to `run_status` (and to the runs of `runs.list`): the tool
calls of an ended run that were not run, and those that ran and failed."""
_ID = Field(min_length=1, max_length=200, description="the client's id for this request")
_SESSION = Field(
    min_length=1,
    max_length=100,
    pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
    description="session name: letters, digits, _ . : -",
)
_PROJECT = Field(
    default="",
    max_length=100,
    description="the project, by the name projects.list gives; may be left out when the "
    "gateway serves one project",
)


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Connect(_Message):
    """First message of a connection: authenticates it (the token is needed off loopback)."""

    type: Literal["connect"]
    id: str = _ID
    token: str = ""
    client: str = Field(default="", max_length=200, description="a name for logs")


class Run(_Message):
    """Start a run: `input` for the agent of `session` (created on first use). A retried
    request with the same `idempotency_key` returns the first run instead of a new one."""

    type: Literal["run"]
    id: str = _ID
    project: str = _PROJECT
    session: str = _SESSION
    input: str = Field(min_length=1, max_length=200_000)
    idempotency_key: str = Field(default="", max_length=200)
    busy: Literal["", "queue", "steer"] = Field(
        default="",
        description="when the session is busy: queue behind its run, or steer (stop its turn "
        "and run this next); empty: as the gateway is configured (busy = ...)",
    )


class Abort(_Message):
    """Stop a run: a queued run is dropped, a running one cancelled (its session stays)."""

    type: Literal["abort"]
    id: str = _ID
    run: str


class Steer(_Message):
    """Redirect a session: its running turn is cancelled and `input` runs next, ahead of
    anything queued."""

    type: Literal["steer"]
    id: str = _ID
    project: str = _PROJECT
    session: str = _SESSION
    input: str = Field(min_length=1, max_length=200_000)


class Answer(_Message):
    """Answer an `approval` question of one of this client's runs."""

    type: Literal["approve", "deny"]
    id: str = _ID
    request: str


class Watch(_Message):
    """Receive the events of `session`'s runs on this connection too."""

    type: Literal["watch"]
    id: str = _ID
    project: str = _PROJECT
    session: str = _SESSION


class Query(_Message):
    """Read-only requests: the projects, sessions, a session's history, the diff (with
    `session`: of the changes that session made, still in effect), the live program's
    changes (with `session`: that session's, by module, each with its state — applied,
    verified, divergent, persisted, rolled_back —, its last check and its diff), runs,
    health."""

    type: Literal[
        "projects.list",
        "sessions.list",
        "sessions.history",
        "changes.diff",
        "changes.list",
        "runs.list",
        "health",
    ]
    id: str = _ID
    project: str = _PROJECT
    session: str | None = None


class Undo(_Message):
    """Roll back `session`'s newest change still in effect (or `change`, one of its own),
    with the later changes of that module; the result says who made each."""

    type: Literal["changes.undo"]
    id: str = _ID
    project: str = _PROJECT
    session: str = _SESSION
    change: str = Field(default="", max_length=50, description="a change id; empty: newest")


ClientMessage = Annotated[
    Connect | Run | Abort | Steer | Answer | Watch | Query | Undo, Field(discriminator="type")
]


class _Sent(BaseModel):
    """A message the server sends: all its fields always go out, so all are required."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class ErrorInfo(_Sent):
    """Why a request failed: a type name and a message that says what to do."""

    type: str
    message: str


class AgentEvent(BaseModel):
    """An agent event: its `type` (text_delta, tool_started, patch_applied, ...) and the
    fields of that type."""

    model_config = ConfigDict(extra="allow")
    type: str


class Result(_Sent):
    """The answer to the request with the same `id`."""

    type: Literal["result"] = "result"
    id: str
    ok: bool
    result: dict[str, Any] | None = None
    error: ErrorInfo | None = None


class Event(_Sent):
    """One agent event of a run (the same objects `liveforge run --json` reports)."""

    type: Literal["event"] = "event"
    project: str = ""
    run: str
    session: str
    seq: int = Field(ge=0, description="position of the event in its run, from 0")
    at: float = Field(description="when the agent produced the event (server clock, Unix s)")
    event: AgentEvent


class ToolCallOutcome(_Sent):
    """A tool call of a run that did not do its work: refused, or run and failed."""

    tool: str
    call_id: str
    by: Literal["approval", "policy", "plugin"] | None = Field(
        default=None,
        description="what refused the call: approval nobody gave (a `deny`, or a question "
        "nobody answered in time), the permission mode or a deny rule, a plugin; null for a "
        "call that ran and failed",
    )
    reason: str = Field(description="the first lines of what the model was told")


class RunStatus(_Sent):
    """A run changed state. `reason` is the turn's end reason when it is done; an ended
    run's message lists the tool calls that were refused (`refused`: the task may not be
    done) and those that ran and failed (`tool_errors`); both are empty before the end."""

    type: Literal["run_status"] = "run_status"
    project: str = ""
    run: str
    session: str
    status: Literal["queued", "running", "done", "aborted", "interrupted", "failed"]
    reason: str = ""
    position: int = Field(default=0, ge=0, description="place in the queue when queued")
    refused: list[ToolCallOutcome] = Field(
        default_factory=list, description="tool calls of the ended run that were not run"
    )
    tool_errors: list[ToolCallOutcome] = Field(
        default_factory=list, description="tool calls of the ended run that ran and failed"
    )


class Approval(_Sent):
    """A question the permission policy asks before a run may go on."""

    type: Literal["approval"] = "approval"
    project: str = ""
    request: str
    run: str
    session: str
    question: str


ServerMessage = Annotated[Result | Event | RunStatus | Approval, Field(discriminator="type")]

_CLIENT: TypeAdapter[Any] = TypeAdapter(ClientMessage)
_SERVER: TypeAdapter[Any] = TypeAdapter(ServerMessage)


def parse_client(text: str | bytes) -> Any:
    """A client message from its JSON text; raises pydantic's ValidationError or ValueError."""
    return _CLIENT.validate_json(text)


def server_message(fields: dict[str, Any]) -> dict[str, Any]:
    """The message `fields` describe (`type` names which), checked against its model and
    completed with its defaults; raises pydantic's ValidationError for a malformed one.

        server_message({"type": "result", "id": "1", "ok": True, "result": {}})
        # {'type': 'result', 'id': '1', 'ok': True, 'result': {}, 'error': None}
    """
    data: dict[str, Any] = _SERVER.dump_python(_SERVER.validate_python(fields))
    return data


def schema() -> dict[str, Any]:
    """The protocol's JSON Schema: both directions, versioned."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"liveforge gateway protocol v{PROTOCOL_VERSION} (revision {PROTOCOL_REVISION})",
        "version": PROTOCOL_VERSION,
        "revision": PROTOCOL_REVISION,
        "client": _CLIENT.json_schema(),
        "server": _SERVER.json_schema(mode="serialization"),
    }


def shipped_schema() -> dict[str, Any]:
    """The schema file shipped in the package."""
    text = resources.files(__package__).joinpath("protocol-v1.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data
