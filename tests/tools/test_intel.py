"""find / references / complete see files and in-memory code alike."""

from __future__ import annotations

import importlib

import pytest

from liveforge.kernel import Runtime, TargetNotFound
from liveforge.tools import using_runtime
from liveforge.tools.intel import complete, find, references

FRESH = (
    "from {pkg}.shapes import area\n\n\ndef made(r: float) -> float:\n"
    "    '''Made in memory.'''\n    return area(r) * 2\n"
)
USER2 = "from {pkg}.fresh import made\n\n\ndef use() -> float:\n    return made(1.0)\n"


@pytest.fixture
def rt(project):
    runtime = Runtime(project_root=project.root)
    for name in ("shapes", "user", "bodies"):
        importlib.import_module(f"{project.pkg}.{name}")
    runtime.patch_module(f"{project.pkg}.fresh", FRESH.replace("{pkg}", project.pkg))
    runtime.patch_module(f"{project.pkg}.user2", USER2.replace("{pkg}", project.pkg))
    with using_runtime(runtime):
        yield runtime


def test_find_lists_definitions_with_signatures(project, rt):
    """find gives kind, dotted path, signature and line; imports are not definitions."""
    lines = find("area").splitlines()
    assert (
        f"def {project.pkg}.shapes.area(radius: float, *, precise: bool=False) -> float :8" in lines
    )
    assert any(line.startswith(f"def {project.pkg}.shapes.Square.area(") for line in lines)
    assert not any(".fresh.area" in line for line in lines)


def test_find_sees_in_memory_patches_not_the_stale_file(project, rt):
    """After a patch, find reports the in-memory signature, once."""
    rt.patch(
        f"{project.pkg}.shapes.area",
        "def area(radius: float, scale: int = 1) -> float:\n    return radius * scale\n",
    )
    lines = [line for line in find("area").splitlines() if ".shapes.area(" in line]
    assert lines == [f"def {project.pkg}.shapes.area(radius: float, scale: int=1) -> float :8"]


def test_find_sees_virtual_modules_and_filters_kind(project, rt):
    """A function defined only in memory is found; kind filters the results."""
    assert find("made") == f"def {project.pkg}.fresh.made(r: float) -> float :4\n"
    assert find("made", kind="class") == "no definitions named 'made' of kind class"
    assert find("Greeter", kind="class").startswith(f"class {project.pkg}.contracts.Greeter")


def test_references_across_files_and_memory(project, rt):
    """References to a file-backed function include uses in virtual modules."""
    text = references(f"{project.pkg}.shapes.area")
    assert text.splitlines()[0] == f"8 references to {project.pkg}.shapes.area"
    assert "tests.test_shapes:9:11 assert area(0.0) == 1" in text
    assert (
        f"{project.pkg}.user:7:50 return sum(Square(s).area() for s in sides) + area(1.0)" in text
    )
    assert f"{project.pkg}.fresh:6:11 return area(r) * 2" in text


def test_references_to_a_virtual_definition(project, rt):
    """Uses of a function that exists only in memory are found in other in-memory modules."""
    text = references(f"{project.pkg}.fresh.made")
    assert text.splitlines() == [
        f"3 references to {project.pkg}.fresh.made",
        f"{project.pkg}.fresh:4:4 def made(r: float) -> float:",
        f"{project.pkg}.user2:1:{len(project.pkg) + 19} from {project.pkg}.fresh import made",
        f"{project.pkg}.user2:5:11 return made(1.0)",
    ]


def test_references_needs_a_definition(project, rt):
    """A module path alone is refused with a hint."""
    with pytest.raises(TargetNotFound, match="needs a definition"):
        references(f"{project.pkg}.shapes")


def test_complete_uses_live_namespaces(project, rt):
    """Completion sees virtual modules and names created by execute()."""
    assert complete(f"{project.pkg}.fresh.ma") == "made(r: float) function"
    rt.execute("answer_value = 42")
    assert complete("answer_v").startswith("answer_value instance")
    assert (
        complete(f"import {project.pkg}.shapes\n{project.pkg}.shapes.Squ", line=2)
        == "Square(side: float) class"
    )
