"""The public surface of `liveforge` is exactly what `__all__` says (and nothing leaks in)."""

from __future__ import annotations

import liveforge

PUBLIC = {
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
    "InvalidName",
    "TargetNotFound",
    "UndecodableSource",
    "UnpersistedChanges",
    "UnsafePath",
    "UnsupportedChange",
    "UnverifiedChange",
    "__version__",
}


def test_all_is_exactly_the_public_api():
    """`liveforge.__all__` lists the public names, each importable from the package."""
    assert set(liveforge.__all__) == PUBLIC
    for name in liveforge.__all__:
        assert getattr(liveforge, name) is not None


def test_public_names_without_underscore_are_all_listed():
    """Every public (non-module) attribute of the package is in `__all__`."""
    import types

    names = {
        n
        for n, v in vars(liveforge).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert names <= PUBLIC


def test_every_error_is_a_liveforge_error():
    """All exported exceptions share the LiveforgeError base."""
    errors = [
        getattr(liveforge, n)
        for n in liveforge.__all__
        if isinstance(getattr(liveforge, n), type)
        and issubclass(getattr(liveforge, n), BaseException)
    ]
    assert errors and all(issubclass(e, liveforge.LiveforgeError) for e in errors)
