"""Undecodable files are data, not crashes: a package holding one module that is not UTF-8
text is inspected, viewed and searched; the undecodable module is marked with its file and
the byte; every error about it names the encoding as the cause."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from liveforge.kernel import Runtime, UndecodableSource
from liveforge.tools import using_runtime
from liveforge.tools.inspection import inspect_module, view_source
from liveforge.tools.intel import find

BAD = b"def bad():\n    return 'caf\xe9'\n"


@pytest.fixture
def rt(project):
    (project.root / project.pkg / "legacy.py").write_bytes(BAD)
    runtime = Runtime(project_root=project.root)
    with using_runtime(runtime):
        yield runtime
    runtime.close()


def test_inspect_lists_the_package_and_marks_the_undecodable_module(project, rt):
    """The package's other modules are listed in full; the bad one says its file, that it
    is not utf-8 text, and the byte (its value, line and offset)."""
    text = inspect_module(project.pkg)
    assert "shapes" in text and "area(radius: float" in text
    path = project.root / project.pkg / "legacy.py"
    marked = f"(undecodable, so not read: {path}: not utf-8 text: byte 0xe9 on line 2, at byte 26"
    assert marked in text
    assert "legacy" in inspect_module("", depth=1)


def test_view_of_the_undecodable_module_names_the_encoding(project, rt):
    """view_source of the module, or of a name in it, is an UndecodableSource naming utf-8
    and the byte; the package's other modules still show."""
    for path in (f"{project.pkg}.legacy", f"{project.pkg}.legacy.bad"):
        with pytest.raises(UndecodableSource, match=r"cannot be read as utf-8 text \(byte 0xe9"):
            view_source(path)
    assert "def area" in view_source(f"{project.pkg}.shapes.area")


def test_find_searches_around_the_undecodable_module(project, rt):
    """find still answers for the package (the good modules at least)."""
    assert f"{project.pkg}.shapes.area" in find("area")


def test_find_marks_what_it_read_from_the_undecodable_module(project, rt):
    """A definition found in the undecodable file is marked, and the answer ends with a
    note naming the file and the byte."""
    text = find("bad")
    path = project.root / project.pkg / "legacy.py"
    assert f"def {project.pkg}.legacy.bad() :1 (its file is not utf-8 text: byte 0xe9" in text
    assert f"note: {path}: not utf-8 text: byte 0xe9 on line 2, at byte 26" in text
    assert text.rstrip().endswith("; names may show replaced bytes")


def test_find_reads_a_file_in_its_declared_encoding(project, rt):
    """A latin-1 file with its coding declaration is Python like any other: its names are
    found as written, with no note."""
    source = "# -*- coding: latin-1 -*-\ndef café():\n    return 1\n"
    (project.root / project.pkg / "old.py").write_bytes(source.encode("latin-1"))
    text = find("café")
    assert f"def {project.pkg}.old.café() :2" in text
    assert "old.py" not in text.split("café() :2")[1]


def test_find_says_a_file_that_does_not_parse_was_not_searched(project, rt):
    """No definitions found is not said of a file find could not read: the answer names it."""
    (project.root / project.pkg / "broken.py").write_text("def half(:\n    pass\n")
    text = find("half")
    assert text.startswith("no definitions named 'half'")
    path = project.root / project.pkg / "broken.py"
    assert f"note: {path}: does not parse: " in text
    assert "its definitions are not searched" in text


def test_a_module_whose_file_became_undecodable_after_import_says_so(tmp_path):
    """Imported while it was UTF-8, then saved in another encoding, then met by a runtime:
    patching it is refused because of the encoding, not as 'no Python source file'."""
    (tmp_path / "pk").mkdir()
    (tmp_path / "pk" / "__init__.py").write_text("")
    (tmp_path / "pk" / "later.py").write_text("def f():\n    return 1\n")
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, ".")
        import pk.later
        open("pk/later.py", "wb").write(b"def f():\\n    return '\\xff'\\n")
        import liveforge
        rt = liveforge.Runtime(".")
        try:
            rt.patch("pk.later.f", "def f():\\n    return 2\\n")
        except liveforge.LiveforgeError as exc:
            print(type(exc).__name__, exc)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.stdout.startswith("UndecodableSource "), run.stdout + run.stderr
    assert "utf-8 text (byte 0xff on line 2" in run.stdout
    assert "no Python source file" not in run.stdout


def test_a_bad_byte_on_the_first_line_is_named_too(project, rt):
    """Where Python's own reader only says "invalid or missing encoding declaration" (the
    bad byte is on a line a coding cookie could be on), the error names the byte."""
    (project.root / project.pkg / "first.py").write_bytes(b"X = 'caf\xe9'\n")
    with pytest.raises(UndecodableSource, match=r"as utf-8 text \(byte 0xe9 on line 1"):
        view_source(f"{project.pkg}.first")
