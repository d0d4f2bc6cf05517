"""Every error liveforge raises, in one map; front ends import their errors from here.

Each class lives with the layer that raises it (the kernel's in `liveforge.kernel.errors`,
the agent's beside its declarations); this module re-exports all of them. Misuse errors also
subclass the matching builtin, shown in brackets. `tests/test_errors_map.py` checks that the
tree below is complete and true.

* LiveforgeError
  * PatchError — a patch could not be applied; the previous state is intact
    * PatchSyntaxError [SyntaxError]
    * PatchExecutionError — the new code raised while its module statements ran
    * UnsupportedChange — a change the engine cannot make live (it says why)
  * ImplSignatureError [TypeError] — an @impl body does not fit its declaration
  * ContractFieldError [TypeError] — a declaration built with an unknown or without a field
  * TargetNotFound [LookupError] — no such dotted path
  * InvalidName [ValueError] — '', '.', '../x' given as a module name or dotted path
  * UndecodableSource [UnicodeError] — a source file that is not text in its encoding
  * ProtectedTarget [PermissionError] — the kernel (or another protected file) refuses patches
    * NotProjectModule — a module that is not the project's own code, no opt-in
  * SecondModuleName [ImportError] — one file asked for under a second module name
  * ProjectImportError [ImportError] — a project module raised while liveforge imported it
  * UnpersistedChanges — a reload would drop in-memory changes
  * ChangeError [LookupError] — no such change, or it cannot be rolled back
  * ExecutionTimeout [TimeoutError] — in-process code ran past its timeout
  * PersistError — files were not written
    * PersistConflict — the file changed on disk since it was loaded
    * UnsafePath [PermissionError] — the file lies outside the project
      * NotProjectCode — in an environment, installed packages or build output
    * UnverifiedChange — no passing check since the change's last edit
  * SandboxError — a check could not be started or run
  * ConfigError [ValueError] — a bad setting, naming its key and file
  * PermissionDenied [PermissionError] — the permission mode or a rule refused a tool call
  * NoRuntime [RuntimeError] — a tool was called outside a runtime
  * ToolDefinitionError [TypeError] — a tool's signature cannot become a JSON schema
  * ArgumentError [ValueError] — a model's tool arguments do not fit the schema
  * EditRefused [ValueError] — a file edit or patch that does not apply; nothing written
  * CommandRefused [PermissionError] — the shell allow/deny lists refused a command
  * MemoryNotFound [LookupError] — no memory has this id
  * EmbeddingError — the embedding provider failed (memory vector search)
  * SessionError — a session could not be opened or written
    * SessionBusy — another front end is running a turn in this project
  * CompactionError — the conversation could not be summarised
  * SkillNotFound [LookupError] — no usable skill of that name
  * SubAgentError [ValueError] — a sub-agent request past a limit, or for an unknown id
  * ProviderError — a model request failed (classified for retry and failover)
    * AuthenticationError
    * BillingError
    * RateLimitError
    * OverloadedError
    * ServerError
    * ProviderTimeout [TimeoutError]
    * ProviderConnectionError [ConnectionError]
    * MalformedResponse
    * ModelNotFound
    * BadRequestError [ValueError]
      * ContextOverflowError
    * StreamInterrupted
  * CommandError — a command-line usage error, with its exit code
  * GatewayError — the gateway refused a client's request (the message says why)

Not errors but signals, internal to one concern and never shown to a user: `CallCancelled`
(a cancelled model call), `DeadlineExceeded` (a BaseException the toolbox deadline raises
inside a tool call). How a turn ends is not an exception at all: `impls.agent_turn.ending`.
"""

from __future__ import annotations

from liveforge.cli._exits import CommandError, ExitCode
from liveforge.declarations.compaction import CompactionError
from liveforge.declarations.contract import ContractFieldError
from liveforge.declarations.files import EditRefused
from liveforge.declarations.memory import EmbeddingError, MemoryNotFound
from liveforge.declarations.permissions import PermissionDenied
from liveforge.declarations.provider_errors import (
    AuthenticationError,
    BadRequestError,
    BillingError,
    ContextOverflowError,
    MalformedResponse,
    ModelNotFound,
    OverloadedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
    StreamInterrupted,
)
from liveforge.declarations.session import SessionBusy, SessionError
from liveforge.declarations.shell import CommandRefused
from liveforge.declarations.skills import SkillNotFound
from liveforge.declarations.subagents import SubAgentError
from liveforge.declarations.tool_schema import ArgumentError, ToolDefinitionError
from liveforge.gateway.core import GatewayError
from liveforge.kernel.errors import (
    ChangeError,
    ConfigError,
    ExecutionTimeout,
    InvalidName,
    LiveforgeError,
    NotProjectCode,
    NotProjectModule,
    PatchError,
    PatchExecutionError,
    PatchSyntaxError,
    PersistConflict,
    PersistError,
    ProjectImportError,
    ProtectedTarget,
    SandboxError,
    SecondModuleName,
    TargetNotFound,
    UndecodableSource,
    UnpersistedChanges,
    UnsafePath,
    UnsupportedChange,
    UnverifiedChange,
)
from liveforge.kernel.live._forward import ImplSignatureError
from liveforge.tools._context import NoRuntime

__all__ = [
    "ArgumentError",
    "AuthenticationError",
    "BadRequestError",
    "BillingError",
    "ChangeError",
    "CommandError",
    "CommandRefused",
    "CompactionError",
    "ConfigError",
    "ContextOverflowError",
    "ContractFieldError",
    "EditRefused",
    "EmbeddingError",
    "ExecutionTimeout",
    "ExitCode",
    "GatewayError",
    "ImplSignatureError",
    "InvalidName",
    "LiveforgeError",
    "MalformedResponse",
    "MemoryNotFound",
    "ModelNotFound",
    "NoRuntime",
    "NotProjectCode",
    "NotProjectModule",
    "OverloadedError",
    "PatchError",
    "PatchExecutionError",
    "PatchSyntaxError",
    "PermissionDenied",
    "PersistConflict",
    "PersistError",
    "ProjectImportError",
    "ProtectedTarget",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeout",
    "RateLimitError",
    "SandboxError",
    "SecondModuleName",
    "ServerError",
    "SessionBusy",
    "SessionError",
    "SkillNotFound",
    "StreamInterrupted",
    "SubAgentError",
    "TargetNotFound",
    "ToolDefinitionError",
    "UndecodableSource",
    "UnpersistedChanges",
    "UnsafePath",
    "UnsupportedChange",
    "UnverifiedChange",
]
