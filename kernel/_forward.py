"""forwardpy extensions: what forwardpy 0.3 falls short of for a live runtime.

Installed once, when `liveforge.kernel` is imported:

- declared attributes keep their defaults (`n: int = 5` on a declaration; 0.3 replaces the
  value by a descriptor and loses it);
- declared method signatures are remembered, and an `@impl` whose signature does not fit its
  declaration raises `ImplSignatureError` naming both;
- helpers the patch engine uses to re-execute impl modules and declaration classes in place:
  find/unregister the registrations a function holds, point a registration at another
  function object, merge a redefined declaration class into the live one, and snapshot /
  restore the registries so a failed patch leaves them untouched.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import forwardpy
from forwardpy import core

from liveforge.kernel.errors import LiveforgeError

_SIGNATURES = "__liveforge_declared_signatures__"
_DECLARED_SETS = (
    core._DECLARED_METHODS,
    core._DECLARED_CLASSMETHODS,
    core._DECLARED_STATICMETHODS,
    core._DECLARED_PROPERTIES,
)
_MISSING = object()


class ImplSignatureError(LiveforgeError, TypeError):
    """An `@impl` body's parameters do not fit the declared method's."""

    def __init__(self, declared: str, declared_sig: str, impl: str, impl_sig: str) -> None:
        self.declared = declared
        self.impl = impl
        super().__init__(
            f"@impl {impl}{impl_sig} does not fit the declaration {declared}{declared_sig}. "
            "Give the implementation the same parameters (names, kinds and order) as the "
            "declaration."
        )


# -- attribute defaults ---------------------------------------------------------------------


def _descriptor_get(self: Any, obj: Any, objtype: type | None = None) -> Any:
    if obj is None:
        return self
    try:
        return getattr(obj, self.storage_name)
    except AttributeError:
        default = getattr(self, "default", _MISSING)
        if default is not _MISSING:
            return default
        raise AttributeError(
            f"'{type(obj).__name__}' object has no attribute '{self.name}'"
        ) from None


def _plain_values(namespace: dict[str, Any]) -> dict[str, Any]:
    annotations = namespace.get("__annotations__", {})
    return {
        name: value
        for name, value in namespace.items()
        if name in annotations
        and not callable(value)
        and not isinstance(value, (property, classmethod, staticmethod))
    }


def _stub_signatures(namespace: dict[str, Any]) -> dict[str, inspect.Signature]:
    signatures: dict[str, inspect.Signature] = {}
    for name, value in namespace.items():
        func = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if inspect.isfunction(func) and not name.startswith("_") and core._is_stub_method(func):
            try:
                signatures[name] = inspect.signature(func)
            except (TypeError, ValueError):
                continue
    return signatures


_original_new = core.ObjectMeta.__new__


def _meta_new(
    mcs: type, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
) -> Any:
    defaults = _plain_values(namespace)
    signatures = _stub_signatures(namespace)
    cls = _original_new(mcs, name, bases, namespace, **kwargs)
    for attr, value in defaults.items():
        descriptor = cls.__dict__.get(attr)
        if isinstance(descriptor, core.ForwardpyAttributeDescriptor):
            descriptor.default = value  # type: ignore[attr-defined]
    type.__setattr__(cls, _SIGNATURES, signatures)
    return cls


# -- signature checking ---------------------------------------------------------------------


def _shape(sig: inspect.Signature) -> list[tuple[str, Any]]:
    params = list(sig.parameters.values())
    return [(p.name, p.kind) for p in params]


def _declared_signature(method: Any) -> tuple[type, str, inspect.Signature] | None:
    cls = getattr(method, "__forwardpy_class__", None)
    name = getattr(method, "__name__", "")
    if cls is None:
        return None
    for klass in cls.__mro__:
        sig = klass.__dict__.get(_SIGNATURES, {}).get(name)
        if sig is not None:
            return cls, name, sig
    return None


def check_impl_signature(method: Any, func: Callable[..., Any]) -> None:
    """Raise `ImplSignatureError` when `func` cannot stand in for the declared `method`."""
    found = _declared_signature(method)
    if found is None or not inspect.isfunction(func):
        return
    cls, name, declared = found
    actual = inspect.signature(func)
    decl_shape, impl_shape = _shape(declared), _shape(actual)
    if decl_shape != impl_shape:
        raise ImplSignatureError(
            f"{cls.__module__}.{cls.__qualname__}.{name}",
            str(declared),
            f"{func.__module__}.{func.__qualname__}",
            str(actual),
        )


_original_impl = core.impl


def _impl(method: Any, *, override: bool = False) -> Callable[[Callable[..., Any]], Any]:
    register = _original_impl(method, override=override)

    def decorator(func: Callable[..., Any]) -> Any:
        check_impl_signature(method, func)
        return register(func)

    return decorator


_impl.__doc__ = _original_impl.__doc__


def install() -> None:
    """Install the extensions into forwardpy (idempotent)."""
    if getattr(core, "_liveforge_installed", False):
        return
    core.ForwardpyAttributeDescriptor.__get__ = _descriptor_get  # type: ignore[method-assign]
    core.ObjectMeta.__new__ = _meta_new  # type: ignore[method-assign]
    core.impl = _impl
    forwardpy.impl = _impl
    core._liveforge_installed = True  # type: ignore[attr-defined]


# -- registrations held by functions --------------------------------------------------------


def is_declaration(cls: Any) -> bool:
    """True for forwardpy declaration classes (subclasses of forwardpy.Object)."""
    return isinstance(cls, core.ObjectMeta)


def registrations_of(func: Any) -> list[tuple[type, str]]:
    """The (class, impl key) registrations whose active body is `func`."""
    found = []
    for (cls, key), _module in core._impl_sources.items():
        if _registered(cls, key) is func:
            found.append((cls, key))
    return found


def active_impl(cls: type, name: str) -> Any:
    """The function currently implementing the declared member `name` of `cls` (a property's
    getter for properties), or None while it is a stub."""
    for klass in cls.__mro__:
        func = core._method_registry.get(klass, {}).get(name)
        if func is not None:
            return func
        prop = core._property_registry.get(klass, {}).get(name)
        if prop is not None and prop._fget is not None:
            return prop._fget
    return None


def _registered(cls: type, key: str) -> Any:
    if key.endswith((".getter", ".setter")):
        prop = core._property_registry.get(cls, {}).get(key.rsplit(".", 1)[0])
        if prop is None:
            return None
        return prop._fget if key.endswith(".getter") else prop._fset
    return core._method_registry.get(cls, {}).get(key)


def unregister(cls: type, key: str) -> None:
    """Drop one registration, restoring the stub (forwardpy's own semantics)."""
    module = core._impl_sources.get((cls, key))
    if module is None:
        return
    # unregister_module_impls works per module; narrow it to this key by hiding the others.
    others = {k: v for k, v in core._impl_sources.items() if v == module and k != (cls, key)}
    for k in others:
        core._impl_sources[k] = "\0liveforge-hidden"
    try:
        forwardpy.unregister_module_impls(module)
    finally:
        core._impl_sources.update(others)


def rebind(cls: type, key: str, func: Any) -> None:
    """Point the registration (cls, key) at `func`, keeping its kind (method/class/static)."""
    if key.endswith((".getter", ".setter")):
        prop = core._property_registry[cls][key.rsplit(".", 1)[0]]
        if key.endswith(".getter"):
            prop._fget = func
        else:
            prop._fset = func
        return
    core._method_registry.setdefault(cls, {})[key] = func
    func.__forwardpy_class__ = cls
    if key in getattr(cls, core._DECLARED_CLASSMETHODS, set()):
        type.__setattr__(cls, key, classmethod(func))
    elif key in getattr(cls, core._DECLARED_STATICMETHODS, set()):
        type.__setattr__(cls, key, staticmethod(func))
    else:
        type.__setattr__(cls, key, func)


# -- snapshots ------------------------------------------------------------------------------


class Snapshot:
    """The forwardpy registries and the class attributes they drive, restorable exactly."""

    def __init__(self) -> None:
        self.methods = {cls: dict(m) for cls, m in core._method_registry.items()}
        self.sources = dict(core._impl_sources)
        self.attributes = dict(core._attribute_registry)
        self.properties = {cls: dict(p) for cls, p in core._property_registry.items()}
        self.accessors = {
            prop: (prop._fget, prop._fset)
            for props in core._property_registry.values()
            for prop in props.values()
        }
        self.class_attrs = {
            (cls, name): cls.__dict__.get(name, _MISSING)
            for cls in core._method_registry
            for name in _declared_names(cls)
        }

    def restore(self) -> None:
        """Put every registry and declared class attribute back as it was."""
        _replace(core._method_registry, self.methods)
        _replace(core._impl_sources, self.sources)
        _replace(core._attribute_registry, self.attributes)
        _replace(core._property_registry, self.properties)
        for prop, (fget, fset) in self.accessors.items():
            prop._fget, prop._fset = fget, fset
        for (cls, name), value in self.class_attrs.items():
            if value is _MISSING:
                if name in cls.__dict__:
                    type.__delattr__(cls, name)
            elif cls.__dict__.get(name, _MISSING) is not value:
                type.__setattr__(cls, name, value)

    def revert_to(self, before: Snapshot) -> Callable[[], None]:
        """How to undo what changed between `before` and this snapshot, touching nothing
        else: registrations other modules made since stay as they are."""
        pairs: list[tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]]] = [
            (core._method_registry, before.methods, self.methods),
            (core._impl_sources, before.sources, self.sources),
            (core._attribute_registry, before.attributes, self.attributes),
            (core._property_registry, before.properties, self.properties),
        ]
        steps = [(live, _delta(old, new)) for live, old, new in pairs]
        accessors = {
            prop: value
            for prop, value in before.accessors.items()
            if self.accessors.get(prop) != value
        }
        attrs = {
            key: value
            for key, value in before.class_attrs.items()
            if self.class_attrs.get(key, _MISSING) is not value
        }

        def revert() -> None:
            for live, delta in steps:
                _apply_delta(live, delta)
            for prop, (fget, fset) in accessors.items():
                prop._fget, prop._fset = fget, fset
            for (cls, name), value in attrs.items():
                if value is _MISSING:
                    if name in cls.__dict__:
                        type.__delattr__(cls, name)
                else:
                    type.__setattr__(cls, name, value)

        return revert


def _delta(before: dict[Any, Any], after: dict[Any, Any]) -> dict[Any, Any]:
    """Entries (one level into nested dicts) whose value differs: key -> value before."""
    delta: dict[Any, Any] = {}
    for key in before.keys() | after.keys():
        old, new = before.get(key, _MISSING), after.get(key, _MISSING)
        if isinstance(old, dict) and isinstance(new, dict):
            inner = {k: old.get(k, _MISSING) for k in old.keys() | new.keys()}
            inner = {k: v for k, v in inner.items() if new.get(k, _MISSING) is not v}
            if inner:
                delta[key] = ("inner", inner)
        elif old is not new:
            delta[key] = ("value", old)
    return delta


def _apply_delta(live: dict[Any, Any], delta: dict[Any, Any]) -> None:
    for key, (how, value) in delta.items():
        if how == "inner":
            target = live.setdefault(key, {})
            for k, v in value.items():
                if v is _MISSING:
                    target.pop(k, None)
                else:
                    target[k] = v
        elif value is _MISSING:
            live.pop(key, None)
        else:
            live[key] = dict(value) if isinstance(value, dict) else value


def _replace(target: dict[Any, Any], saved: dict[Any, Any]) -> None:
    target.clear()
    target.update({k: dict(v) if isinstance(v, dict) else v for k, v in saved.items()})


def _declared_names(cls: type) -> set[str]:
    names: set[str] = set()
    for attr in _DECLARED_SETS:
        names |= set(cls.__dict__.get(attr, ()))
    return names


# -- redefining a declaration class in place ------------------------------------------------


def merge_declaration(old: type, new: type) -> set[str]:
    """Move forwardpy's bookkeeping from a re-created declaration `new` onto the live `old`.

    Returns the attribute names the generic class merge must leave alone on `old` (declared
    members that are still declared and already implemented keep their implementation).
    """
    keep: set[str] = set()
    old_impls = core._method_registry.get(old, {})
    new_declared = _declared_names(new)
    for name in _declared_names(old) - new_declared:
        for key in [
            k
            for (c, k) in list(core._impl_sources)
            if c is old and (k == name or k.startswith(name + "."))
        ]:
            unregister(old, key)
    for name in new_declared:
        if name in old_impls:
            keep.add(name)
    old_props = core._property_registry.get(old, {})
    new_props = core._property_registry.pop(new, {})
    merged_props = {}
    for name, prop in new_props.items():
        if name in old_props:
            merged_props[name] = old_props[name]
            keep.add(name)
        else:
            prop.owner_cls = old
            merged_props[name] = prop
    core._property_registry[old] = merged_props
    core._attribute_registry[old] = core._attribute_registry.pop(new, {})
    core._method_registry.pop(new, None)
    core._method_registry.setdefault(old, {})
    for value in new.__dict__.values():
        func = getattr(value, "__func__", value)
        if getattr(func, "__forwardpy_class__", None) is new:
            func.__forwardpy_class__ = old
    return keep
