"""read_file / write_file / edit_file / apply_patch through a real Toolbox: bounded numbered
reads, exact edits with a uniqueness check, diffs applied all or nothing, refusals the model
can act on, and every write in the runtime's history."""

from __future__ import annotations

import importlib

import pytest

import liveforge.impls  # noqa: F401  (the @impl bodies)
from liveforge.declarations.permissions import Policy, effect_of
from liveforge.declarations.tool_settings import FileSettings, ToolSettings
from liveforge.declarations.toolbox import Toolbox
from liveforge.kernel import Runtime
from liveforge.tools import files

FULL_AUTO = Policy(mode="full-auto")  # these tests are about the tools, not the gate


@pytest.fixture
def box(project):
    runtime = Runtime(project_root=project.root)
    yield Toolbox(policy=FULL_AUTO, runtime=runtime, packages=["liveforge.tools"], limit=8000)
    runtime.close()


def call(box, name, **arguments):
    return box.call(name, arguments)


def test_read_file_numbers_lines_and_takes_a_range(project, box):
    """A range comes back numbered with the total; a range past the end says the size."""
    project.write("notes.txt", "".join(f"line {i}\n" for i in range(1, 31)))
    result = call(box, "read_file", path="notes.txt", start=10, end=12)
    assert not result.is_error
    assert result.text == "notes.txt lines 10-12 of 30\n10 line 10\n11 line 11\n12 line 12\n"
    assert "has 30 lines" in call(box, "read_file", path="notes.txt", start=99).text
    small = Toolbox(policy=FULL_AUTO, runtime=box.runtime, packages=["liveforge.tools"], limit=120)
    cut = small.call("read_file", {"path": "notes.txt", "start": 5}).text
    shown = [line for line in cut.splitlines() if line.lstrip()[:1].isdigit()]
    assert f"read_file('notes.txt', start={int(shown[-1].split()[0]) + 1})" in cut


def test_read_file_refuses_binaries_big_files_and_paths_outside(project, box, tmp_path_factory):
    """Each refusal is an error result that says what to do instead."""
    (project.root / "blob.bin").write_bytes(b"\x00\x01binary")
    assert "not UTF-8 text" in call(box, "read_file", path="blob.bin").text
    secret = tmp_path_factory.mktemp("home") / "id_rsa"
    secret.write_text("PRIVATE KEY\n")
    refused = call(box, "read_file", path=str(secret))
    assert refused.is_error and "outside the project root" in refused.text
    assert "PRIVATE KEY" not in refused.text
    assert call(box, "read_file", path="../x").is_error
    for folder in ("", "."):
        refused = call(box, "write_file", path=folder, content="x")
        assert refused.is_error and "is a folder" in refused.text
    box_small = Toolbox(
        policy=FULL_AUTO, runtime=box.runtime, packages=["liveforge.tools"], limit=8000
    )
    box_small.settings = ToolSettings(files=FileSettings(max_read_bytes=4))
    big = box_small.call("read_file", {"path": "blob.bin"})
    assert big.is_error and "byte limit" in big.text


def test_edit_file_needs_exactly_one_match(project, box):
    """Missing and ambiguous anchors are refused with the line numbers; the file is unchanged."""
    path = project.write("config.ini", "[a]\nx = 1\n[b]\nx = 1\n")
    missing = call(box, "edit_file", path="config.ini", old_string="y = 1", new_string="y = 2")
    assert missing.is_error and "not found" in missing.text
    twice = call(box, "edit_file", path="config.ini", old_string="x = 1", new_string="x = 2")
    assert twice.is_error and "occurs 2 times" in twice.text and "lines 2, 4" in twice.text
    assert path.read_text() == "[a]\nx = 1\n[b]\nx = 1\n"
    done = call(
        box, "edit_file", path="config.ini", old_string="[b]\nx = 1", new_string="[b]\nx = 3"
    )
    assert not done.is_error and done.text.startswith("c1 wrote config.ini (+1 -1 lines)")
    assert path.read_text() == "[a]\nx = 1\n[b]\nx = 3\n"
    every = call(
        box, "edit_file", path="config.ini", old_string="x =", new_string="y =", replace_all=True
    )
    assert not every.is_error and path.read_text() == "[a]\ny = 1\n[b]\ny = 3\n"


PATCH = """\
--- a/docs/guide.md
+++ b/docs/guide.md
@@ -1,3 +1,3 @@
 # Guide
-Run it slowly.
+Run it quickly.
 The end.
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+page
"""


def test_apply_patch_changes_and_creates_files_or_nothing(project, box):
    """A two-file diff applies; a diff whose second hunk does not fit writes nothing at all."""
    guide = project.write("docs/guide.md", "# Guide\nRun it slowly.\nThe end.\n")
    bad = PATCH.replace(" The end.", " The start.")
    refused = call(box, "apply_patch", patch=bad)
    assert refused.is_error and "does not apply to docs/guide.md" in refused.text
    assert guide.read_text() == "# Guide\nRun it slowly.\nThe end.\n"
    assert not (project.root / "docs" / "new.md").exists()
    result = call(box, "apply_patch", patch=PATCH)
    assert not result.is_error, result.text
    assert guide.read_text() == "# Guide\nRun it quickly.\nThe end.\n"
    assert (project.root / "docs" / "new.md").read_text() == "# New\npage\n"
    assert "+Run it quickly." in call(box, "diff").text
    assert not call(box, "apply_patch", patch="just words").text.startswith("c")
    twice = (
        "--- a/docs/guide.md\n+++ b/docs/guide.md\n@@ -1 +1 @@\n-# Guide\n+# The guide\n"
        "--- a/docs/guide.md\n+++ b/docs/guide.md\n@@ -3 +3 @@\n-The end.\n+Fin.\n"
    )
    assert not call(box, "apply_patch", patch=twice).is_error
    assert guide.read_text() == "# The guide\nRun it quickly.\nFin.\n"


def test_editing_a_loaded_module_file_is_live_and_one_rollback_restores_both(project, box):
    """edit_file on a module the program imported patches it in memory at once."""
    shapes = importlib.import_module(f"{project.pkg}.shapes")
    area = shapes.area
    result = call(
        box,
        "edit_file",
        path=f"{project.pkg}/shapes.py",
        old_string="else 3.14 * radius ** 2",
        new_string="else 3.0 * radius ** 2",
    )
    assert f"module {project.pkg}.shapes patched in memory too" in result.text
    assert area(1.0) == 3.0
    assert "3.0 * radius" in (project.root / project.pkg / "shapes.py").read_text()
    assert not call(box, "rollback").is_error
    assert area(1.0) == 3.14
    assert "3.14 * radius" in (project.root / project.pkg / "shapes.py").read_text()


def test_file_tools_declare_their_effects():
    """Reading is a read; every other file tool writes files."""
    assert effect_of(files.read_file) == "read"
    assert {effect_of(f) for f in (files.write_file, files.edit_file, files.apply_patch)} == {
        "write"
    }


def test_reading_a_module_file_that_memory_has_moved_past_says_so(project, box):
    """After a patch in memory, read_file of that module's file says the file is not what
    runs; editing the file is refused until the patch is persisted or rolled back."""
    importlib.import_module(f"{project.pkg}.shapes")
    box.call("patch", {"path": f"{project.pkg}.shapes.UNIT", "source": "UNIT = 2.0\n"})
    read = call(box, "read_file", path=f"{project.pkg}/shapes.py", start=1, end=3)
    assert f"module {project.pkg}.shapes has changes in memory not in this file" in read.text
    refused = call(
        box, "edit_file", path=f"{project.pkg}/shapes.py", old_string="UNIT = 1.0", new_string="x"
    )
    assert refused.is_error and "changes in memory that the file lacks (c1)" in refused.text
