"""liveforge.kernel: the runtime core — module registry, patch engine, changes, sandbox.

No LLM knowledge lives here; this is pure runtime machinery, usable without any agent.
It refuses patches to itself unless a Runtime is created with `allow_kernel_patches=True`.
"""

import importlib as _importlib
from typing import TYPE_CHECKING
from typing import Any as _Any

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
from liveforge.kernel.live import _forward

if TYPE_CHECKING:
    from liveforge.kernel.boundary._policy import CheckSettings
    from liveforge.kernel.history._changes import Change, ChangeStatus
    from liveforge.kernel.live._forward import ImplSignatureError
    from liveforge.kernel.runtime._execute import ExecutionResult
    from liveforge.kernel.runtime._runtime import Runtime

_forward.install()

# Imported on first use, so a program (or a command) that only needs the errors or one
# helper module does not pay for the whole runtime (pydantic models, the patch engine).
_LAZY = {
    "Change": "liveforge.kernel.history._changes",
    "ChangeStatus": "liveforge.kernel.history._changes",
    "ExecutionResult": "liveforge.kernel.runtime._execute",
    "ImplSignatureError": "liveforge.kernel.live._forward",
    "CheckSettings": "liveforge.kernel.boundary._policy",
    "Runtime": "liveforge.kernel.runtime._runtime",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'liveforge.kernel' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
