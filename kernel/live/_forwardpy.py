"""The one place liveforge reaches into forwardpy's internals.

forwardpy's public API (`Object`, `Extension`, `impl`, `unregister_module_impls`) has no way
to read its registries, to hook class creation or `@impl` registration, or to unregister a
single implementation. liveforge needs all of these (DESIGN §3), so this adapter names each
internal it relies on, checks at import that the installed forwardpy has them, and offers
them as plain functions. Nothing else in liveforge imports `forwardpy.core`.
`tests/kernel/live/test_forwardpy_adapter.py` pins each forwardpy behaviour used here, so a
forwardpy upgrade that changes one fails there, by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import forwardpy
from forwardpy import core

__all__ = [
    "DECLARED_SETS",
    "AttributeDescriptor",
    "ObjectMeta",
    "active_impl",
    "attribute_registry",
    "declared_names",
    "impl_sources",
    "install_hooks",
    "is_stub_method",
    "kind_of",
    "method_registry",
    "original_impl",
    "original_meta_new",
    "property_registry",
    "registered",
    "set_impl",
    "unregister_one",
]

#: forwardpy.core names this adapter uses (checked at import).
_REQUIRED = (
    "_method_registry",
    "_attribute_registry",
    "_property_registry",
    "_impl_sources",
    "_is_stub_method",
    "_DECLARED_METHODS",
    "_DECLARED_CLASSMETHODS",
    "_DECLARED_STATICMETHODS",
    "_DECLARED_PROPERTIES",
    "ForwardpyAttributeDescriptor",
    "ObjectMeta",
    "impl",
)


def _check() -> None:
    missing = [name for name in _REQUIRED if not hasattr(core, name)]
    if missing:
        import importlib.metadata  # only on this error path: it costs startup time

        version = importlib.metadata.version("forwardpy")
        raise ImportError(
            f"forwardpy {version} lacks {', '.join(missing)}, which liveforge relies on; "
            'install the supported release: pip install "forwardpy>=0.3,<0.4"'
        )


_check()

ObjectMeta = core.ObjectMeta
AttributeDescriptor = core.ForwardpyAttributeDescriptor
#: class -> {method name: active implementation}
method_registry: dict[type, dict[str, Callable[..., Any]]] = core._method_registry
#: class -> {attribute name: declared type}
attribute_registry: dict[type, dict[str, Any]] = core._attribute_registry
#: class -> {property name: forwardpy property (with ``_fget``/``_fset``)}
property_registry: dict[type, dict[str, Any]] = core._property_registry
#: (class, impl key) -> module that registered it; keys are names or "prop.getter/.setter"
impl_sources: dict[tuple[type, str], str] = core._impl_sources
#: the class attributes where forwardpy keeps the names a declaration declares, per kind
DECLARED_SETS: tuple[str, ...] = (
    core._DECLARED_METHODS,
    core._DECLARED_CLASSMETHODS,
    core._DECLARED_STATICMETHODS,
    core._DECLARED_PROPERTIES,
)
#: forwardpy's own `impl` decorator and declaration class constructor, before liveforge
#: wraps them (captured once, so re-running the kernel never wraps a wrapper)
original_impl: Callable[..., Any] = getattr(core, "_liveforge_original_impl", core.impl)
original_meta_new: Callable[..., Any] = getattr(
    core, "_liveforge_original_meta_new", core.ObjectMeta.__new__
)


def is_stub_method(func: Callable[..., Any]) -> bool:
    """forwardpy's test for a declared stub (a body of ``...``; needs `inspect.getsource`)."""
    return bool(core._is_stub_method(func))


def declared_names(cls: Any) -> set[str]:
    """Names a declaration class itself declares (empty for any other object)."""
    if not isinstance(cls, type):
        return set()
    names: set[str] = set()
    for attr in DECLARED_SETS:
        names |= set(cls.__dict__.get(attr, ()))
    return names


def kind_of(cls: type, name: str) -> str:
    """ "classmethod", "staticmethod" or "method": how `cls` declares `name`."""
    if name in getattr(cls, core._DECLARED_CLASSMETHODS, set()):
        return "classmethod"
    if name in getattr(cls, core._DECLARED_STATICMETHODS, set()):
        return "staticmethod"
    return "method"


def active_impl(cls: type, name: str) -> Any:
    """The function implementing the declared member `name` of `cls` or a base (a property's
    getter for properties), or None while it is a stub."""
    for klass in cls.__mro__:
        func = method_registry.get(klass, {}).get(name)
        if func is not None:
            return func
        prop = property_registry.get(klass, {}).get(name)
        if prop is not None and prop._fget is not None:
            return prop._fget
    return None


def registered(cls: type, key: str) -> Any:
    """The function registered under impl key `key` of `cls` itself, or None."""
    if key.endswith((".getter", ".setter")):
        prop = property_registry.get(cls, {}).get(key.rsplit(".", 1)[0])
        if prop is None:
            return None
        return prop._fget if key.endswith(".getter") else prop._fset
    return method_registry.get(cls, {}).get(key)


def set_impl(cls: type, key: str, func: Any) -> None:
    """Make `func` the registered body of (cls, key), installed as forwardpy installs one."""
    if key.endswith((".getter", ".setter")):
        prop = property_registry[cls][key.rsplit(".", 1)[0]]
        if key.endswith(".getter"):
            prop._fget = func
        else:
            prop._fset = func
        return
    method_registry.setdefault(cls, {})[key] = func
    func.__forwardpy_class__ = cls
    kind = kind_of(cls, key)
    value = {"classmethod": classmethod, "staticmethod": staticmethod}.get(kind)
    type.__setattr__(cls, key, value(func) if value else func)


def unregister_one(cls: type, key: str) -> None:
    """Drop one registration and restore its stub, with forwardpy's own semantics.

    `forwardpy.unregister_module_impls` works per module; the module's other registrations
    are taken out of its source map for the call and put back after."""
    module = impl_sources.get((cls, key))
    if module is None:
        return
    others = {k: v for k, v in impl_sources.items() if v == module and k != (cls, key)}
    for other in others:
        del impl_sources[other]
    try:
        forwardpy.unregister_module_impls(module)
    finally:
        impl_sources.update(others)


def install_hooks(
    *,
    descriptor_get: Callable[..., Any],
    meta_new: Callable[..., Any],
    impl: Callable[..., Any],
) -> None:
    """Replace forwardpy's attribute read, declaration class creation and `impl` decorator
    (the public `forwardpy.impl` too) for the whole process."""
    core._liveforge_original_impl = original_impl  # type: ignore[attr-defined]
    core._liveforge_original_meta_new = original_meta_new  # type: ignore[attr-defined]
    core.ForwardpyAttributeDescriptor.__get__ = descriptor_get  # type: ignore[method-assign]
    core.ObjectMeta.__new__ = meta_new  # type: ignore[method-assign]
    core.impl = impl
    forwardpy.impl = impl
