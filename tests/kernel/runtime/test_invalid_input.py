"""Bad input gets a typed liveforge error saying what to do, and leaves state intact."""

from __future__ import annotations

import importlib
import sys

import pytest

from liveforge.kernel.errors import ChangeError, InvalidName, LiveforgeError, UndecodableSource

BAD_NAMES = ["", ".", "..", "../x", "a..b", "x/y", "pkg.", ".pkg", "1abc", "class.x", " a"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_module_names_are_refused_everywhere_before_anything_changes(rt, project, name):
    """patch_module, patch, source, reload, diff and persist refuse a name that cannot be a
    module with InvalidName (also a ValueError); history and sys.modules stay as they were."""
    module = project.module("def f():\n    return 1\n")
    rt.patch(f"{module.__name__}.f", "def f():\n    return 2\n")
    before, modules = [c.id for c in rt.history()], set(sys.modules)
    calls = [
        lambda: rt.patch_module(name, "x = 1\n"),
        lambda: rt.patch(name, "x = 1\n"),
        lambda: rt.source(name),
        lambda: rt.reload(name),
        lambda: rt.diff(name),
        lambda: rt.persist([name], force=True),
    ]
    for call in calls:
        with pytest.raises(InvalidName) as info:
            call()
        assert isinstance(info.value, ValueError) and repr(name) in str(info.value)
        assert "Nothing was changed" in str(info.value)
    assert [c.id for c in rt.history()] == before and set(sys.modules) == modules
    assert module.f() == 2 and rt.persist(force=True).modules == [module.__name__]


@pytest.mark.parametrize("change_id", ["", "  "])
def test_an_empty_change_id_is_refused_not_read_as_the_newest(rt, project, change_id):
    """rollback('') and rollback_to('') raise ChangeError; the newest change stays live."""
    module = project.module("def f():\n    return 1\n")
    rt.patch(f"{module.__name__}.f", "def f():\n    return 2\n")
    for call in (rt.rollback, rt.rollback_to):
        with pytest.raises(ChangeError, match="is not a change id"):
            call(change_id)
    assert module.f() == 2 and rt.history()[-1].status.value == "applied"


def test_an_undecodable_module_file_is_refused_naming_the_file(rt, project):
    """A module file that is not UTF-8 and declares nothing: importing it, reading its
    source or patching it raises UndecodableSource naming the file and the bad byte."""
    name = project.name("bad")
    path = project.root / f"{name}.py"
    path.write_bytes(b"def f():\n    return '\xff\xfe'\n")
    importlib.invalidate_caches()
    with pytest.raises(UndecodableSource) as imported:
        importlib.import_module(name)
    for call in (lambda: rt.source(name), lambda: rt.patch(f"{name}.f", "def f(): pass\n")):
        with pytest.raises(UndecodableSource) as info:
            call()
        assert str(path) in str(info.value) and "0xff on line 2" in str(info.value)
    assert isinstance(imported.value, LiveforgeError) and "PEP 263" in str(imported.value)
    assert rt.history() == []


def test_an_unknown_coding_cookie_is_refused_naming_the_file(rt, project):
    """A coding line naming no codec is an UndecodableSource, not a SyntaxError from
    tokenize about a file it does not name."""
    name = project.name("cookie")
    path = project.root / f"{name}.py"
    path.write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    importlib.invalidate_caches()
    with pytest.raises(UndecodableSource) as info:
        rt.source(name)
    assert str(path) in str(info.value) and "no-such-codec" in str(info.value)


@pytest.mark.parametrize(
    ("encoding", "text"), [("latin-1", "café"), ("cp1252", "€ and é"), ("shift_jis", "日本")]
)
def test_a_declared_encoding_is_kept_when_a_patch_is_persisted(rt, project, encoding, text):
    """A module with a PEP 263 coding line is patched and persisted in that encoding."""
    name = project.name("enc")
    path = project.root / f"{name}.py"
    path.write_bytes(f"# -*- coding: {encoding} -*-\nNAME = 'x'\n".encode(encoding))
    importlib.invalidate_caches()
    module = importlib.import_module(name)
    rt.patch(f"{name}.NAME", f"NAME = {text!r}\n")
    rt.persist(force=True)
    assert path.read_bytes() == f"# -*- coding: {encoding} -*-\nNAME = {text!r}\n".encode(encoding)
    assert module.NAME == text and rt.reload(name).id == ""
