"""liveforge.kernel: the runtime core — module registry, patch engine, changes, sandbox.

No LLM knowledge lives here; this is pure runtime machinery, usable without any agent.
It refuses patches to itself unless a Runtime is created with `allow_kernel_patches=True`.
"""

from liveforge.kernel import _forward
from liveforge.kernel._changes import Change, ChangeStatus
from liveforge.kernel._execute import ExecutionResult
from liveforge.kernel._forward import ImplSignatureError
from liveforge.kernel._runtime import Runtime
from liveforge.kernel.errors import (
    ChangeError,
    ConfigError,
    ExecutionTimeout,
    InvalidName,
    LiveforgeError,
    PatchError,
    PatchExecutionError,
    PatchSyntaxError,
    PersistConflict,
    PersistError,
    ProtectedTarget,
    SandboxError,
    TargetNotFound,
    UndecodableSource,
    UnpersistedChanges,
    UnsafePath,
    UnsupportedChange,
    UnverifiedChange,
)

_forward.install()

#: The distribution's version (pyproject reads it from here).
__version__ = "0.1.0"

__all__ = [
    "Change",
    "ChangeError",
    "ChangeStatus",
    "ConfigError",
    "ExecutionResult",
    "ExecutionTimeout",
    "ImplSignatureError",
    "InvalidName",
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
    "UndecodableSource",
    "UnpersistedChanges",
    "UnsafePath",
    "UnsupportedChange",
    "UnverifiedChange",
]
