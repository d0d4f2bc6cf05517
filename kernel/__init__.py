"""liveforge.kernel: the runtime core — module registry, patch engine, changes, sandbox.

No LLM knowledge lives here; this is pure runtime machinery, usable without any agent.
It refuses patches to itself unless a Runtime is created with `allow_kernel_patches=True`.
"""

from liveforge.kernel.boundary._policy import CheckSettings
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
    SecondModuleName,
    TargetNotFound,
    UndecodableSource,
    UnpersistedChanges,
    UnsafePath,
    UnsupportedChange,
    UnverifiedChange,
)
from liveforge.kernel.history._changes import Change, ChangeStatus
from liveforge.kernel.live import _forward
from liveforge.kernel.live._forward import ImplSignatureError
from liveforge.kernel.runtime._execute import ExecutionResult
from liveforge.kernel.runtime._runtime import Runtime

_forward.install()

#: The distribution's version (pyproject reads it from here).
__version__ = "0.1.0"

__all__ = [
    "Change",
    "ChangeError",
    "ChangeStatus",
    "CheckSettings",
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
    "SecondModuleName",
    "TargetNotFound",
    "UndecodableSource",
    "UnpersistedChanges",
    "UnsafePath",
    "UnsupportedChange",
    "UnverifiedChange",
]
