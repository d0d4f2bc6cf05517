# mypy: disable-error-code="empty-body"
"""The conversation of one session and its append-only transcript.

A session lives in `<project>/.liveforge/sessions/<id>.jsonl`: one JSON record per line,
written (and flushed) as each step happens, so a crash loses at most the step in flight.
Records (field `t`):

    header      id, project root, created, liveforge version
    message     one conversation message (+ its token estimate)
    usage       tokens a model request reported (the context-size anchor)
    change      a change to the live program (whole sources, to re-apply on resume)
    status      a change's new status (rolled_back, persisted, verified)
    confirmed   self-patches a turn ended cleanly with (no longer on probation)
    compaction  the conversation was replaced by a summary + recent messages
    note        something that happened (self-patch rollback, restore problems, ...)
    turn        a turn started / ended (with its reason)
    title       the session's title
    file_step   files code the session ran wrote, undoable (before and after, by file)
    file_step_gone  such a step was undone (or handed to a later process under a new key)

Resume replays the records: the whole conversation (compactions included) and the
runtime's unpersisted changes, re-applied in order; a change that no longer applies is
reported, never silently dropped; files a shell command wrote are undoable again when they
are still what it left (else resume says which file changed). A self-patch is re-applied
only once a turn has ended cleanly with it (`confirmed`): one still on probation when the
process stopped — rolled back or crashing — is reported and left out, so resume starts from
the last state that worked.
Known secret values are scrubbed from every record.
Turns of one project run in one process at a time (a lock file); a second front end gets
`SessionBusy` naming the process that holds it. Within that process, sessions may run turns
at once, one turn per session (its lane); their tool calls take turns on the live program.

Example::

    session = Session.create(".", secrets=[key])
    session.append(Message.user("hi"))
    later = Session.open(".", session.id)      # same messages
    Session.list_sessions(".")                 # [SessionInfo(...)]
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from liveforge.declarations.contract import Contract, fresh
from liveforge.declarations.messages import Message, Usage
from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime

__all__ = [
    "SESSIONS_DIR",
    "ChangeRecord",
    "Session",
    "SessionBusy",
    "SessionError",
    "SessionInfo",
    "SessionLive",
    "SessionState",
    "sessions_dir",
]


SESSIONS_DIR = Path(".liveforge") / "sessions"


def sessions_dir(root: str | Path) -> Path:
    """Where the project's transcripts live."""
    return Path(root).resolve() / SESSIONS_DIR


SessionState = Literal["idle", "running", "interrupted"]


class SessionError(LiveforgeError):
    """A session could not be opened or written."""

    def __init__(self, message: str, *, session_id: str = "", path: str = "") -> None:
        super().__init__(message)
        self.session_id = session_id
        self.path = path


class SessionBusy(SessionError):
    """Another process is running a turn in this project."""

    def __init__(self, project: str, holder_pid: int | None, holder_session: str) -> None:
        who = f"process {holder_pid}" if holder_pid else "another process"
        what = f" (session {holder_session})" if holder_session else ""
        super().__init__(
            f"{who}{what} is running a turn in {project}; wait for it to finish, or stop "
            "that front end, then try again.",
            session_id=holder_session,
        )
        self.holder_pid = holder_pid
        self.holder_session = holder_session


class ChangeRecord(BaseModel):
    """A change as the transcript keeps it: enough to re-apply it in a new process."""

    model_config = ConfigDict(extra="forbid")
    key: str
    """Unique within the session: "<epoch>:<change id>"."""
    change_id: str
    target: str
    module: str
    kind: str
    before: str | None
    after: str
    target_after: str | None = None
    status: str = "applied"
    self_patch: bool = False
    confirmed: bool = False
    """A self-patch a turn ended cleanly with; only confirmed self-patches are re-applied."""
    replaces: str | None = None
    """Key of the change this one re-applied on resume."""

    @property
    def live(self) -> bool:
        """Not rolled back and not yet written to its file."""
        return self.status not in ("rolled_back", "persisted", "superseded")


class SessionInfo(BaseModel):
    """One row of `Session.list_sessions`."""

    model_config = ConfigDict(frozen=True)
    id: str
    title: str
    created: float
    updated: float
    state: SessionState
    turns: int
    messages: int
    unpersisted: int
    path: str
    holder_pid: int | None = None
    parent: str = ""
    """For a sub-agent's session: the id of its parent's session (empty otherwise)."""


@dataclass
class SessionLive:
    """What an open session keeps besides its data: the transcript handle and an index."""

    transcript: IO[str] | None = None
    """The open transcript file (opened on the first write, closed by `close_transcript`)."""
    by_key: dict[str, ChangeRecord] | None = None
    """`changes` by key, built on first use."""
    restored: list[str] = field(default_factory=list)
    """What resuming re-applied (the lines `restore` returned), for front ends to show."""
    file_steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Undoable file steps of code the session ran (a shell command's writes), by key, as
    the transcript holds them: what resuming gives back to the runtime."""
    step_keys: dict[int, str] = field(default_factory=dict)
    """The key of each of this process's runtime file steps already in the transcript."""
    plugin_problems: list[str] = field(default_factory=list)
    """Plugins that could not be loaded for this session's agent, and why."""
    parent_session: str = ""
    """For a sub-agent's session: the id of its parent's session."""
    subagent_id: str = ""
    """For a sub-agent's session: its id among its parent's sub-agents."""
    subagent_depth: int = 0
    """For a sub-agent's session: how deep it is nested (the top agent is 0)."""
    lane: str = ""
    """For a sub-agent's session: the top-level session its work belongs to (changes it
    makes are that session's); empty for a top-level session (its own id)."""


class Session(Contract):
    """A conversation with its transcript file, token estimates and recorded changes."""

    id: str
    root: Path
    path: Path
    title: str
    messages: list[Message]
    tokens: list[int]
    """Token estimate per message (from reported usage where known)."""
    last_usage: Usage | None
    """Usage of the newest model request (None after a compaction or a resume)."""
    usage_at: int
    """Number of messages the newest request carried (for `last_usage`)."""
    changes: list[ChangeRecord]
    turns: int
    secrets: list[str]
    created: float
    """When the session began (seconds since the epoch)."""
    epoch: int = 1
    """How many times the transcript was opened; change keys start with it."""
    open_turn: bool = False
    """A turn started and has not ended (in this process, or in one that stopped)."""
    live: SessionLive = fresh(SessionLive)

    @staticmethod
    def create(
        root: str | Path, *, secrets: list[str] | None = None, session_id: str | None = None
    ) -> Session:
        """A new empty session of the project at `root`, its transcript file created."""
        ...

    @staticmethod
    def open(root: str | Path, session_id: str, *, secrets: list[str] | None = None) -> Session:
        """Reload a session from its transcript ("latest" picks the newest one).

        Raises `SessionBusy` while another front end is running a turn of that session."""
        ...

    @staticmethod
    def list_sessions(root: str | Path) -> list[SessionInfo]:
        """The project's sessions, newest first."""
        ...

    def append(self, message: Message, *, tokens: int | None = None) -> None:
        """Add a message to the conversation and the transcript."""
        ...

    def amend_last(self, message: Message) -> None:
        """Replace the newest message (adding a note to it); recorded in the transcript."""
        ...

    def record_usage(self, usage: Usage) -> None:
        """Anchor the context estimate on what the provider reported for the last request."""
        ...

    def replace_messages(
        self, messages: list[Message], tokens: list[int], summary: dict[str, Any]
    ) -> None:
        """Swap the conversation for a compacted one; `summary` describes the compaction."""
        ...

    def note(self, kind: str, text: str, **data: Any) -> None:
        """Record something that happened, for the transcript's reader."""
        ...

    def turn_started(self, user_input: str) -> int:
        """Record a new turn; returns its number. Sets the title from the first input."""
        ...

    def turn_ended(self, reason: str) -> None:
        """Record the end of the current turn."""
        ...

    def track(self, runtime: Runtime, self_prefixes: tuple[str, ...] = ()) -> list[Change]:
        """Record the runtime's new changes and status changes since the last call; returns
        the new changes."""
        ...

    def confirm(self, change_ids: list[str]) -> None:
        """Record that a turn ended cleanly with these self-patches (this process's ids)."""
        ...

    def unpersisted(self) -> list[ChangeRecord]:
        """Live changes not yet written to files, oldest first."""
        ...

    def restore(self, runtime: Runtime, self_prefixes: tuple[str, ...] = ()) -> list[str]:
        """Re-apply the unpersisted changes to `runtime`; one line per change saying how it
        went ("re-applied c3 pkg.mod.f as c1", "c4 pkg.mod no longer applies: ..."). The
        lines are kept in `live.restored` too. Self-patches never confirmed are left out."""
        ...

    def turn_lock(self) -> AbstractContextManager[None]:
        """Hold the project's turn lock for a `with` block: `SessionBusy` if another process
        holds it, or if this session is already in a turn (other sessions of this process
        may run turns at the same time)."""
        ...

    def scrub(self, text: str) -> str:
        """`text` with every known secret value replaced by "[redacted]"."""
        ...

    def context_tokens(self) -> int:
        """Estimated tokens of the conversation (anchored on reported usage)."""
        ...

    def info(self) -> SessionInfo:
        """This session as a listing row."""
        ...
