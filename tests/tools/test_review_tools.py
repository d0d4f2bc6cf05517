"""Review regressions in the tools: properties with setters, run records kept out of search."""

from __future__ import annotations

import importlib

import pytest

from liveforge.kernel import Runtime
from liveforge.tools import using_runtime
from liveforge.tools.inspection import inspect_module, view_source
from liveforge.tools.intel import find, references

TEMP = """
    class Gauge:
        def __init__(self) -> None:
            self._t = 0

        @property
        def temp(self) -> int:
            return self._t

        @temp.setter
        def temp(self, value: int) -> None:
            self._t = value
    """


@pytest.fixture
def rt(project):
    runtime = Runtime(project_root=project.root)
    project.write(f"{project.pkg}/gauge.py", TEMP)
    importlib.import_module(f"{project.pkg}.shapes")
    with using_runtime(runtime):
        yield runtime
    runtime.close()


def test_view_source_of_property_shows_getter_and_setter(project, rt):
    """view_source of a property with a setter shows both parts, from the getter on."""
    text = view_source(f"{project.pkg}.gauge.Gauge.temp")
    assert text.splitlines()[0].startswith(f"# {project.pkg}.gauge:5-11 ")
    assert "@property" in text and "@temp.setter" in text


def test_inspect_lists_a_property_with_setter_once(project, rt):
    """inspect_module names a getter+setter property once, with the getter's signature."""
    text = inspect_module(f"{project.pkg}.gauge.Gauge")
    assert text.count("temp(") == 1, text


def test_find_and_references_skip_sandbox_run_records(project, rt):
    """Copies of overlay modules in sandbox_runs/ are not reported as definitions or uses."""
    rt.patch(f"{project.pkg}.shapes.area", "def area(radius: float) -> float:\n    return 1.0\n")
    assert rt.verify(f"from {project.pkg}.shapes import area; area(2)").status == "passed"
    assert any((project.root / "sandbox_runs").rglob("*shapes.py"))
    found = find("area", kind="function")
    assert "sandbox_runs" not in found and f"{project.pkg}.shapes.area(" in found
    assert "sandbox_runs" not in references(f"{project.pkg}.shapes.Square")


def test_complete_names_a_position_outside_the_code(project, rt):
    """complete() with a line or column outside the code says which range is valid."""
    from liveforge.tools.intel import complete

    with pytest.raises(ValueError, match="lines 1-2"):
        complete("import os\nos.pa", line=5)
    with pytest.raises(ValueError, match="columns 0-5"):
        complete("import os\nos.pa", line=2, column=9)
    with pytest.raises(ValueError, match="lines 1-2"):
        complete("import os\nos.pa", line=0)
    assert "path statement" in complete("import os\nos.pa", line=2)


def test_view_source_shows_the_running_text_after_the_file_changed(project, rt):
    """A module imported under the runtime whose file was edited afterwards is shown as it
    runs (the text captured at import), like the runtime itself would patch it."""
    path = project.write(f"{project.pkg}/edited.py", "def running() -> int:\n    return 1\n")
    importlib.import_module(f"{project.pkg}.edited")
    path.write_text("def on_disk_only() -> int:\n    return 2\n")
    text = view_source(f"{project.pkg}.edited")
    assert "def running()" in text and "on_disk_only" not in text


def test_view_source_past_the_end_names_the_valid_lines(project, rt):
    """A window past the end says which lines exist and echoes only what was asked."""
    text = view_source(f"{project.pkg}.gauge", start=50)
    assert text == f"{project.pkg}.gauge: lines 1-11; nothing to show at line 50."
