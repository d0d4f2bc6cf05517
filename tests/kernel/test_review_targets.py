"""Review regressions: odd patch targets (properties with setters, class member reports),
and which environment variables count as secrets."""

from __future__ import annotations

from kernel_support import Project, src

from liveforge import Runtime

PROPERTY = src('''
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
    ''')


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
        project: Project, rt: Runtime) -> None:
    """A property patched with its whole chain (getter + setter) replaces both parts."""
    mod = project.module(PROPERTY)
    obj = mod.C()
    rt.patch(f"{mod.__name__}.C.x", src('''
        @property
        def x(self):
            return self._x + 100

        @x.setter
        def x(self, value):
            self._x = value * 2
        '''))
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
    change = rt.patch(f"{mod.__name__}.C.x", src('''
        @property
        def x(self):
            return 1

        @x.setter
        def x(self, value):
            pass
        '''))
    assert change.updated == ["C.x"]


def test_common_credential_variables_count_as_secrets() -> None:
    """AWS-style secret keys, passwords and secrets are kept from sandbox children, like
    API keys and tokens; ordinary settings are not."""
    from liveforge.kernel._secrets import without_secrets

    env = {"AWS_SECRET_ACCESS_KEY": "a", "DB_PASSWORD": "b", "CLIENT_SECRET": "c",
           "DJANGO_SECRET_KEY": "d", "GITHUB_TOKEN": "e", "HOME": "/home/x"}
    assert without_secrets(env) == {"HOME": "/home/x"}
