"""forwardpy declarations and @impl bodies under live patching."""

from __future__ import annotations

import forwardpy
import pytest
from kernel_support import src

from liveforge import ImplSignatureError, PatchExecutionError

DECL = src('''
    import forwardpy

    class Greeter(forwardpy.Object):
        name: str
        times: int = 2

        def greet(self, punct: str) -> str:
            """Say hello."""
            ...

        def wave(self) -> str:
            ...
''')


def impl_source(decl: str, body: str = "return 'hi ' + self.name + punct") -> str:
    return src(f"""
        import forwardpy
        from {decl} import Greeter

        @forwardpy.impl(Greeter.greet)
        def greet(self, punct: str) -> str:
            {body}

        @forwardpy.impl(Greeter.wave)
        def wave(self) -> str:
            return "wave"
    """)


@pytest.fixture
def pair(project):
    decl = project.module(DECL)
    impl = project.module(impl_source(decl.__name__))
    return decl, impl


def test_declared_attribute_keeps_its_default(pair):
    """`times: int = 2` on a declaration is the default of instances (forwardpy 0.3 lost it)."""
    decl, _ = pair
    assert decl.Greeter(name="a").times == 2
    assert decl.Greeter(name="a", times=5).times == 5


def test_in_memory_declaration_is_recognised(rt, project):
    """A declaration created only in memory has real stubs (its source is in linecache)."""
    name = f"virt_{project.prefix}decl"
    rt.patch_module(name, DECL)
    import sys

    cls = sys.modules[name].Greeter
    assert "greet" in cls.__forwardpy_declared_methods__
    with pytest.raises(NotImplementedError, match="greet"):
        cls(name="x").greet("!")


def test_patching_declared_method_patches_its_impl_body(rt, pair):
    """rt.patch('decl.Greeter.greet') replaces the active @impl body, keeping its decorator."""
    decl, impl = pair
    obj, greet = decl.Greeter(name="bo"), impl.greet
    change = rt.patch(
        f"{decl.__name__}.Greeter.greet",
        "def greet(self, punct: str) -> str:\n    return 'yo ' + self.name + punct\n",
    )
    assert obj.greet("!") == "yo bo!" and change.kind == "impl"
    assert change.module == impl.__name__ and impl.greet is greet
    assert "@forwardpy.impl(Greeter.greet)" in rt.source(impl.__name__)


def test_impl_module_patch_removing_an_impl_restores_the_stub(rt, pair):
    """Re-executing an impl module unregisters impls its new source no longer has."""
    decl, impl = pair
    new = impl_source(decl.__name__).split("@forwardpy.impl(Greeter.wave)")[0]
    rt.patch_module(impl.__name__, new)
    with pytest.raises(NotImplementedError):
        decl.Greeter(name="x").wave()
    assert decl.Greeter(name="x").greet("?") == "hi x?"


def test_impl_body_patch_keeps_registration_identity(rt, pair):
    """After patching an impl function the class attribute is still that same function."""
    decl, impl = pair
    rt.patch(
        f"{impl.__name__}.greet",
        "@forwardpy.impl(Greeter.greet)\n"
        "def greet(self, punct: str) -> str:\n    return 'direct'\n",
    )
    assert decl.Greeter.greet is impl.greet and decl.Greeter(name="z").greet("") == "direct"


def test_an_impl_module_patch_keeps_the_active_impl_registered(rt, pair):
    """Re-running an @impl statement leaves forwardpy's registry naming the live body (the
    registry follow-up must not take its entry out), and no note claims an entry was."""
    from liveforge.kernel.live import _forwardpy as fp

    decl, impl = pair
    greet = impl.greet
    new = impl_source(decl.__name__, "return 'hey ' + self.name + punct")
    change = rt.patch_module(impl.__name__, "import os\n" + new)
    assert fp.active_impl(decl.Greeter, "greet") is greet
    assert decl.Greeter(name="x").greet("!") == "hey x!"
    assert not [n for n in change.notes if "taken out" in n]


def test_redefining_declaration_updates_class_in_place(rt, pair):
    """A changed declaration class is the same object, impls kept, new stubs added."""
    decl, _ = pair
    cls, obj = decl.Greeter, decl.Greeter(name="k")
    rt.patch(
        f"{decl.__name__}.Greeter",
        DECL.split("\n\n", 1)[1].replace(
            "    def wave(self) -> str:\n        ...\n",
            "    def wave(self) -> str:\n        ...\n\n    def bow(self) -> str:\n        ...\n",
        ),
    )
    assert decl.Greeter is cls and obj.greet("!") == "hi k!" and obj.wave() == "wave"
    assert "bow" in cls.__forwardpy_declared_methods__
    with pytest.raises(NotImplementedError):
        obj.bow()


def test_impl_with_wrong_signature_is_reported_naming_both(rt, pair):
    """An @impl whose parameters differ from the declaration raises, naming both."""
    decl, impl = pair
    with pytest.raises(PatchExecutionError) as info:
        rt.patch(
            f"{impl.__name__}.wave",
            "@forwardpy.impl(Greeter.wave)\ndef wave(self, extra) -> str:\n    return ''\n",
        )
    cause = info.value.__cause__
    assert isinstance(cause, ImplSignatureError)
    assert "Greeter.wave" in str(cause) and "(self, extra)" in str(cause)
    assert decl.Greeter(name="x").wave() == "wave"


def test_signature_check_applies_to_plain_imports(project):
    """The signature check also guards impl modules imported the normal way."""
    decl = project.module(DECL)
    with pytest.raises(ImplSignatureError):

        @forwardpy.impl(decl.Greeter.wave)
        def wave(self, nope):  # pragma: no cover - never registered
            return ""


def test_classmethod_and_staticmethod_impls_pass_the_signature_check(project):
    """Declared class/static methods accept impls with the declared parameters."""
    decl = project.module(
        src("""
        import forwardpy

        class Store(forwardpy.Object):
            @classmethod
            def create(cls, root: str) -> "Store":
                ...

            @staticmethod
            def version(major: int) -> str:
                ...
    """)
    )
    project.module(
        src(f"""
        import forwardpy
        from {decl.__name__} import Store

        @forwardpy.impl(Store.create)
        def create(cls, root: str) -> Store:
            return (cls, root)

        @forwardpy.impl(Store.version)
        def version(major: int) -> str:
            return f"v{{major}}"
    """)
    )
    assert decl.Store.create("r") == (decl.Store, "r") and decl.Store.version(2) == "v2"
