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

from liveforge.kernel.errors import LiveforgeError
from liveforge.kernel.live import _forwardpy as fp
from liveforge.kernel.live._forwardpy import active_impl, declared_names, is_stub_method

__all__ = [
    "ImplSignatureError",
    "Snapshot",
    "active_impl",
    "check_impl_signature",
    "install",
    "is_declaration",
    "merge_declaration",
    "rebind",
    "registrations_of",
    "unregister",
]

_SIGNATURES = "__liveforge_declared_signatures__"
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
        if inspect.isfunction(func) and not name.startswith("_") and is_stub_method(func):
            try:
                signatures[name] = inspect.signature(func)
            except (TypeError, ValueError):
                continue
    return signatures


def _meta_new(
    mcs: type, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
) -> Any:
    defaults = _plain_values(namespace)
    signatures = _stub_signatures(namespace)
    cls = fp.original_meta_new(mcs, name, bases, namespace, **kwargs)
    for attr, value in defaults.items():
        descriptor = cls.__dict__.get(attr)
        if isinstance(descriptor, fp.AttributeDescriptor):
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


def _impl(method: Any, *, override: bool = False) -> Callable[[Callable[..., Any]], Any]:
    register = fp.original_impl(method, override=override)

    def decorator(func: Callable[..., Any]) -> Any:
        check_impl_signature(method, func)
        return register(func)

    return decorator


_impl.__doc__ = fp.original_impl.__doc__


def install() -> None:
    """Install the extensions into forwardpy (idempotent: forwardpy's originals are wrapped
    once, however often this runs).

    forwardpy has no hooks for class creation, attribute access or `@impl` registration, so
    these three are replaced process-wide (every forwardpy declaration, liveforge's own and a
    managed project's, gets defaults and signature checks alike)."""
    fp.install_hooks(descriptor_get=_descriptor_get, meta_new=_meta_new, impl=_impl)


# -- registrations held by functions --------------------------------------------------------


def is_declaration(cls: Any) -> bool:
    """True for forwardpy declaration classes (subclasses of forwardpy.Object)."""
    return isinstance(cls, fp.ObjectMeta)


def registers_impls(module: str) -> bool:
    """True when module `module` registered `@impl` bodies."""
    return module in fp.impl_sources.values()


def registrations_of(func: Any) -> list[tuple[type, str]]:
    """The (class, impl key) registrations whose active body is `func`."""
    return [(cls, key) for (cls, key) in fp.impl_sources if fp.registered(cls, key) is func]


#: Drop one registration, restoring the stub (forwardpy's own semantics).
unregister = fp.unregister_one
#: Point the registration (cls, key) at `func`, keeping its kind (method/class/static).
rebind = fp.set_impl


# -- snapshots ------------------------------------------------------------------------------


class Snapshot:
    """The forwardpy registries and the class attributes they drive, restorable exactly."""

    def __init__(self) -> None:
        self.methods = {cls: dict(m) for cls, m in fp.method_registry.items()}
        self.sources = dict(fp.impl_sources)
        self.attributes = dict(fp.attribute_registry)
        self.properties = {cls: dict(p) for cls, p in fp.property_registry.items()}
        self.accessors = {
            prop: (prop._fget, prop._fset)
            for props in fp.property_registry.values()
            for prop in props.values()
        }
        self.class_attrs = {
            (cls, name): cls.__dict__.get(name, _MISSING)
            for cls in fp.method_registry
            for name in declared_names(cls)
        }

    def restore(self) -> None:
        """Put every registry and declared class attribute back as it was."""
        _replace(fp.method_registry, self.methods)
        _replace(fp.impl_sources, self.sources)
        _replace(fp.attribute_registry, self.attributes)
        _replace(fp.property_registry, self.properties)
        for prop, (fget, fset) in self.accessors.items():
            prop._fget, prop._fset = fget, fset
        for (cls, name), value in self.class_attrs.items():
            if value is _MISSING:
                if name in cls.__dict__:
                    type.__delattr__(cls, name)
            elif cls.__dict__.get(name, _MISSING) is not value:
                type.__setattr__(cls, name, value)

    def revert_between(self, before: Snapshot) -> None:
        """Undo what changed between `before` and this snapshot (see `revert_to`)."""
        self.revert_to(before)()

    def revert_to(self, before: Snapshot) -> Callable[[], None]:
        """How to undo what changed between `before` and this snapshot, touching nothing
        else: registrations other modules made since stay as they are."""
        pairs: list[tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]]] = [
            (fp.method_registry, before.methods, self.methods),
            (fp.impl_sources, before.sources, self.sources),
            (fp.attribute_registry, before.attributes, self.attributes),
            (fp.property_registry, before.properties, self.properties),
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


# -- redefining a declaration class in place ------------------------------------------------


def merge_declaration(old: type, new: type) -> set[str]:
    """Move forwardpy's bookkeeping from a re-created declaration `new` onto the live `old`.

    Returns the attribute names the generic class merge must leave alone on `old` (declared
    members that are still declared and already implemented keep their implementation).
    """
    keep: set[str] = set()
    old_impls = fp.method_registry.get(old, {})
    new_declared = declared_names(new)
    for name in declared_names(old) - new_declared:
        for key in [
            k
            for (c, k) in list(fp.impl_sources)
            if c is old and (k == name or k.startswith(name + "."))
        ]:
            unregister(old, key)
    for name in new_declared:
        if name in old_impls:
            keep.add(name)
    old_props = fp.property_registry.get(old, {})
    new_props = fp.property_registry.pop(new, {})
    merged_props = {}
    for name, prop in new_props.items():
        if name in old_props:
            merged_props[name] = old_props[name]
            keep.add(name)
        else:
            prop.owner_cls = old
            merged_props[name] = prop
    fp.property_registry[old] = merged_props
    fp.attribute_registry[old] = fp.attribute_registry.pop(new, {})
    fp.method_registry.pop(new, None)
    fp.method_registry.setdefault(old, {})
    for value in new.__dict__.values():
        func = getattr(value, "__func__", value)
        if getattr(func, "__forwardpy_class__", None) is new:
            func.__forwardpy_class__ = old
    return keep
