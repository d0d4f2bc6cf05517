"""liveforge: a live, self-modifying Python runtime for LLM agents.

Patch a running program by dotted path, check the change in isolation, and persist only what
passed.
"""

from liveforge.kernel import (
    Change,
    ChangeError,
    ChangeStatus,
    ConfigError,
    ExecutionResult,
    ExecutionTimeout,
    ImplSignatureError,
    LiveforgeError,
    PatchError,
    PatchExecutionError,
    PatchSyntaxError,
    PersistConflict,
    PersistError,
    ProtectedTarget,
    Runtime,
    SandboxError,
    TargetNotFound,
    UnpersistedChanges,
    UnsafePath,
    UnsupportedChange,
    UnverifiedChange,
)

__version__ = "0.1.0"

__all__ = [
    "Change",
    "ChangeError",
    "ChangeStatus",
    "ConfigError",
    "ExecutionResult",
    "ExecutionTimeout",
    "ImplSignatureError",
    "LiveforgeError",
    "PatchError",
    "PatchExecutionError",
    "PatchSyntaxError",
    "PersistConflict",
    "PersistError",
    "ProtectedTarget",
    "Runtime",
    "SandboxError",
    "TargetNotFound",
    "UnpersistedChanges",
    "UnsafePath",
    "UnsupportedChange",
    "UnverifiedChange",
    "__version__",
]
