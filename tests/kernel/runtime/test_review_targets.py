"""Review regressions: odd patch targets (properties with setters, class member reports),
and which environment variables count as secrets."""

from __future__ import annotations

import pytest
from kernel_support import Project, src

from liveforge import Runtime
from liveforge.kernel.errors import PatchSyntaxError

PROPERTY = src("""
    class C:
        def __init__(self):
            self._x = 1

        @property
        def x(self):
            return self._x

        @x.setter
        def x(self, value):
            self._x = value

        def other(self):
            return "other"
    """)


def test_patching_a_property_getter_keeps_its_setter(project: Project, rt: Runtime) -> None:
    """Patching only the getter of a property with a setter replaces the getter; the setter
    stays defined and working."""
    mod = project.module(PROPERTY)
    obj = mod.C()
    rt.patch(f"{mod.__name__}.C.x", "@property\ndef x(self):\n    return self._x * 10\n")
    obj.x = 5
    assert obj.x == 50
    assert rt.source(f"{mod.__name__}.C").count("def x(") == 2


def test_property_source_shows_getter_and_setter(project: Project, rt: Runtime) -> None:
    """`source()` of a property is all of its parts, getter and setter together."""
    mod = project.module(PROPERTY)
    text = rt.source(f"{mod.__name__}.C.x")
    assert "@property" in text and "@x.setter" in text


def test_patching_a_property_with_getter_and_setter_replaces_both(
    project: Project, rt: Runtime
) -> None:
    """A property patched with its whole chain (getter + setter) replaces both parts."""
    mod = project.module(PROPERTY)
    obj = mod.C()
    rt.patch(
        f"{mod.__name__}.C.x",
        src("""
        @property
        def x(self):
            return self._x + 100

        @x.setter
        def x(self, value):
            self._x = value * 2
        """),
    )
    obj.x = 3
    assert obj.x == 106
    assert rt.source(f"{mod.__name__}.C").count("def x(") == 2


def test_patching_only_a_setter_keeps_the_getter(project: Project, rt: Runtime) -> None:
    """A setter-only patch replaces the setter and leaves the getter as it was."""
    mod = project.module(PROPERTY)
    obj = mod.C()
    rt.patch(f"{mod.__name__}.C.x", "@x.setter\ndef x(self, value):\n    self._x = -value\n")
    obj.x = 3
    assert obj.x == -3


def test_class_patch_does_not_report_untouched_property(project: Project, rt: Runtime) -> None:
    """A patch of another method does not list an unchanged getter+setter property as
    updated, and a changed property is listed once."""
    mod = project.module(PROPERTY)
    change = rt.patch(f"{mod.__name__}.C.other", "def other(self):\n    return 'new'\n")
    assert change.updated == ["C.other"]
    change = rt.patch(
        f"{mod.__name__}.C.x",
        src("""
        @property
        def x(self):
            return 1

        @x.setter
        def x(self, value):
            pass
        """),
    )
    assert change.updated == ["C.x"]


def test_common_credential_variables_count_as_secrets() -> None:
    """AWS-style secret keys, passwords and secrets are kept from sandbox children, like
    API keys and tokens; ordinary settings are not."""
    from liveforge.kernel.boundary._secrets import without_secrets

    env = {
        "AWS_SECRET_ACCESS_KEY": "a",
        "DB_PASSWORD": "b",
        "CLIENT_SECRET": "c",
        "DJANGO_SECRET_KEY": "d",
        "GITHUB_TOKEN": "e",
        "HOME": "/home/x",
    }
    assert without_secrets(env) == {"HOME": "/home/x"}


def test_names_of_a_removed_star_import_are_removed(project: Project, rt: Runtime) -> None:
    """Dropping `from .base import *` removes the names it bound (not names the new source
    binds itself), and rollback brings them back."""
    pkg = project.name("pkg")
    project.write(f"{pkg}.base", "def helper():\n    return 1\n\nSHARED = 2\n")
    user = project.module("from .base import *\n", name=f"{pkg}.user")
    assert user.helper() == 1
    change = rt.patch_module(user.__name__, "SHARED = 3\n")
    assert not hasattr(user, "helper") and user.SHARED == 3
    assert "helper" in change.removed
    rt.rollback()
    assert user.helper() == 1 and user.SHARED == 2


def test_a_star_import_kept_in_the_new_source_keeps_its_names(
    project: Project, rt: Runtime
) -> None:
    """When one of two star imports goes, names the remaining one also provides stay."""
    pkg = project.name("pkg")
    project.write(f"{pkg}.one", "from os.path import join\n\n\ndef only_one():\n    pass\n")
    project.write(f"{pkg}.two", "from os.path import join\n")
    user = project.module(f"from {pkg}.one import *\nfrom {pkg}.two import *\n", name=f"{pkg}.user")
    rt.patch_module(user.__name__, f"from {pkg}.two import *\n")
    assert hasattr(user, "join") and not hasattr(user, "only_one")


def test_module_whose_file_broke_before_tracking_is_not_poisoned(
    project: Project, rt: Runtime
) -> None:
    """A module imported before the runtime whose file no longer compiles is refused with a
    clear error, and works again once the file is fixed (the broken text is not kept)."""
    import importlib
    import sys

    name = project.name("late")
    path = project.write(name, "def f():\n    return 1\n")
    sys.path_importer_cache.clear()
    # Imported with plain importlib machinery, as if before the runtime existed.
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    path.write_text("def f(:\n")
    with pytest.raises(PatchSyntaxError, match="Fix the file"):
        rt.reload(name)
    path.write_text("def f():\n    return 2\n")
    rt.reload(name)
    assert module.f() == 2


def test_patch_of_code_the_runtime_uses_is_still_recorded(rt: Runtime) -> None:
    """A patch that breaks a stdlib function liveforge itself calls is recorded anyway, so
    it can be rolled back."""
    import posixpath

    code = posixpath.realpath.__code__
    try:
        change = rt.patch(
            "posixpath.realpath",
            "def realpath(filename, *, strict=False):\n    raise OSError('x')\n",
            outside_project=True,
        )
        assert rt.history()[-1] is change
        rt.rollback(change.id)
        assert posixpath.realpath.__code__ is code or posixpath.realpath("/") == "/"
    finally:
        posixpath.realpath.__code__ = code


def test_adding_a_method_to_a_one_line_class_says_to_patch_the_class(
    project: Project, rt: Runtime
) -> None:
    """`class A: pass` cannot take a new method by dotted path; the error says so instead
    of blaming the syntax of the given source, and patching the class works."""
    from liveforge.kernel.errors import PatchError

    mod = project.module("class A: pass\n")
    with pytest.raises(PatchError, match="patch the whole class") as info:
        rt.patch(f"{mod.__name__}.A.m", "def m(self):\n    return 1\n")
    assert not isinstance(info.value, PatchSyntaxError)
    rt.patch(f"{mod.__name__}.A", "class A:\n    def m(self):\n        return 1\n")
    assert mod.A().m() == 1


def test_change_kind_is_that_of_the_new_definition(project: Project, rt: Runtime) -> None:
    """A change's kind describes what the patch defines (a new class is a class, a method
    turned staticmethod is a staticmethod), not what stood there before."""
    mod = project.module("class Q:\n    def m(self):\n        return 1\n")
    name = mod.__name__
    assert rt.patch(f"{name}.Q.m", "@staticmethod\ndef m():\n    return 6\n").kind == "staticmethod"
    assert rt.patch(f"{name}.Fresh", "class Fresh:\n    pass\n").kind == "class"
    assert rt.patch(f"{name}.Q.n", "def n(self):\n    return 2\n").kind == "method"


def test_libraries_of_a_virtualenv_inside_the_project_are_preloaded() -> None:
    """A library imported from a site-packages folder that lies inside the project root (a
    `.venv/` in the project) is still pre-imported by the sandbox template."""
    from pathlib import Path

    import pydantic

    from liveforge.kernel.checks._preload import preload_names

    site_packages = Path(pydantic.__file__).resolve().parents[1]
    around = site_packages.parent  # a root that contains the library folder
    assert "pydantic" in preload_names(around)


def test_outer_transaction_lists_only_changes_that_survived(project: Project, rt: Runtime) -> None:
    """When an inner transaction fails and is rolled back, its changes do not appear in the
    enclosing transaction's list of changes."""
    mod = project.module("A = 1\nB = 1\n")
    with rt.transaction() as outer:
        kept = rt.patch(f"{mod.__name__}.A", "A = 2\n")
        with pytest.raises(RuntimeError), rt.transaction():
            rt.patch(f"{mod.__name__}.B", "B = 2\n")
            raise RuntimeError("inner fails")
    assert outer == [kept] and (mod.A, mod.B) == (2, 1)


def test_removing_a_definition_uncovers_the_star_imported_name(
    project: Project, rt: Runtime
) -> None:
    """A definition that shadowed a star-imported name, once removed, leaves the imported
    value bound, as a fresh import of the new source would."""
    pkg = project.name("pkg")
    project.write(f"{pkg}.base", "def helper():\n    return 'base'\n")
    user = project.module(
        "from .base import *\n\n\ndef helper():\n    return 'own'\n", name=f"{pkg}.user"
    )
    assert user.helper() == "own"
    rt.patch_module(user.__name__, "from .base import *\n")
    assert user.helper() == "base"
    rt.rollback()
    assert user.helper() == "own"


def test_a_syntax_error_is_placed_on_its_line_of_the_given_source(
    project: Project, rt: Runtime
) -> None:
    """Blank lines before a definition that does not compile count: the error names the
    line of the source as given (a file's line), and the patch changes nothing."""
    mod = project.module("def f():\n    return 1\n")
    with pytest.raises(PatchSyntaxError) as info:
        rt.patch(f"{mod.__name__}.f", "\n\ndef f(:\n    return 2\n")
    assert "(line 3 of the given source)" in str(info.value)
    assert info.value.lineno == 3 and mod.f() == 1
