"""Each forwardpy behaviour the kernel's adapter relies on, pinned on the installed forwardpy.

A forwardpy release that changes one of these fails here, by name (DESIGN §3)."""

from __future__ import annotations

import linecache

import forwardpy
import pytest
from forwardpy import core
from kernel_support import src

from liveforge.kernel.live import _forwardpy as fp

DECL = src("""
    import forwardpy

    class Shape(forwardpy.Object):
        sides: int

        def area(self) -> float:
            ...

        def name(self) -> str:
            ...

        @classmethod
        def unit(cls) -> "Shape":
            ...

        @property
        def label(self) -> str:
            ...
""")


@pytest.fixture
def shapes(project):
    decl = project.module(DECL)
    impl = project.module(
        src(f"""
        import forwardpy
        from {decl.__name__} import Shape

        @forwardpy.impl(Shape.area)
        def area(self) -> float:
            return 1.5

        @forwardpy.impl(Shape.name)
        def name(self) -> str:
            return "shape"

        @forwardpy.impl(Shape.label.getter)
        def label(self) -> str:
            return "L"
    """)
    )
    return decl.Shape, impl


def test_impl_registers_in_the_method_registry_and_source_map(shapes):
    """@impl stores the body per class and name, and the module that registered it."""
    shape, impl = shapes
    assert fp.method_registry[shape]["area"] is impl.area
    assert fp.impl_sources[(shape, "area")] == impl.__name__
    assert impl.area.__forwardpy_class__ is shape
    assert fp.registered(shape, "area") is impl.area


def test_property_impls_live_on_the_forwardpy_property(shapes):
    """A property's getter is its forwardpy property's `_fget`, keyed "name.getter"."""
    shape, impl = shapes
    assert fp.property_registry[shape]["label"]._fget is impl.label
    assert fp.registered(shape, "label.getter") is impl.label
    assert fp.impl_sources[(shape, "label.getter")] == impl.__name__


def test_declared_names_per_kind_are_class_attributes(shapes):
    """The declared-name sets sit on the class under forwardpy's attribute names."""
    shape, _ = shapes
    assert {"area", "name", "unit", "label"} <= fp.declared_names(shape)
    assert fp.kind_of(shape, "unit") == "classmethod"
    assert fp.kind_of(shape, "area") == "method"


def test_declared_attributes_become_descriptors_with_storage_names(shapes):
    """`sides: int` becomes an attribute descriptor with `name` and `storage_name`."""
    shape, _ = shapes
    descriptor = shape.__dict__["sides"]
    assert isinstance(descriptor, fp.AttributeDescriptor)
    assert descriptor.name == "sides"
    assert getattr(shape(sides=3), descriptor.storage_name) == 3


def test_a_stub_is_recognised_only_with_its_source(shapes):
    """forwardpy needs inspect.getsource for a stub: without linecache it is no stub."""
    namespace: dict[str, object] = {}
    code = "def f(self):\n    ...\n"
    filename = "<liveforge-adapter-probe>"
    exec(compile(code, filename, "exec"), namespace)
    assert not fp.is_stub_method(namespace["f"])  # type: ignore[arg-type]
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        assert fp.is_stub_method(namespace["f"])  # type: ignore[arg-type]
    finally:
        del linecache.cache[filename]


def test_unregister_one_restores_a_stub_and_keeps_the_others(shapes):
    """One registration goes (its stub is back); the module's other ones stay."""
    shape, impl = shapes
    fp.unregister_one(shape, "area")
    assert (shape, "area") not in fp.impl_sources
    assert fp.impl_sources[(shape, "name")] == impl.__name__
    assert fp.active_impl(shape, "area") is None
    with pytest.raises(NotImplementedError):
        shape(sides=1).area()
    assert shape(sides=1).name() == "shape"


def test_set_impl_installs_a_body_as_forwardpy_does(shapes):
    """A re-pointed registration is what instances call."""
    shape, _ = shapes

    def area(self):
        return 9.0

    fp.set_impl(shape, "area", area)
    assert shape(sides=1).area() == 9.0
    assert fp.active_impl(shape, "area") is area


def test_public_impl_is_the_kernels_checked_wrapper():
    """The kernel's hooks are installed once: forwardpy.impl is liveforge's wrapper around
    forwardpy's original, which the adapter keeps."""
    assert forwardpy.impl is core.impl
    assert forwardpy.impl is not fp.original_impl
    assert forwardpy.impl.__doc__ == fp.original_impl.__doc__


def test_a_forwardpy_without_a_relied_on_internal_fails_at_import(monkeypatch):
    """The adapter names what is missing and the release to install."""
    monkeypatch.delattr(core, "_impl_sources")
    with pytest.raises(ImportError, match=r"_impl_sources.*forwardpy>=0\.3,<0\.4"):
        fp._check()
