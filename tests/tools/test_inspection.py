"""inspect_module and view_source on a fixture project, through a real Runtime."""

from __future__ import annotations

import importlib
import sys

import pytest

from liveforge.kernel import Runtime, TargetNotFound
from liveforge.tools import using_runtime
from liveforge.tools.inspection import inspect_module, view_source


@pytest.fixture
def rt(project):
    runtime = Runtime(project_root=project.root)
    importlib.import_module(f"{project.pkg}.bodies")
    importlib.import_module(f"{project.pkg}.user")
    with using_runtime(runtime):
        yield runtime


def test_tree_shows_signatures_lines_and_docs(project, rt):
    """Functions show their signature as written, their line and first doc sentence."""
    text = inspect_module(f"{project.pkg}.shapes")
    assert "area(radius: float, *, precise: bool=False) -> float :8 — Area of a circle." in text
    assert "  @property perimeter() -> float :26" in text
    assert "  @classmethod unit() -> 'Square' :30" in text
    assert "UNIT = 1.0" in text and "_hidden" not in text


def test_declared_methods_show_impl_location_or_stub(project, rt):
    """A declaration lists each declared method with its active @impl module:line or stub."""
    text = inspect_module(f"{project.pkg}.contracts.Greeter")
    assert f"greet(loud: bool=False) -> str :11 impl {project.pkg}.bodies:8" in text
    assert "part(n: int) -> str :15 stub" in text


def test_unimported_submodules_are_listed_from_disk(project, rt):
    """Submodules nobody imported appear (marked ~) with their members."""
    text = inspect_module(project.pkg, depth=3)
    assert "  later/ ~ — A subpackage nobody imported yet." in text
    assert "    deep ~ — Not imported by anything." in text
    assert "      lazy(x: int) -> int :4" in text
    assert "marks: * changed" in text


def test_leaf_modules_list_their_public_names(project, rt):
    """At the depth limit a module shows its public names in brackets."""
    text = inspect_module(project.pkg, depth=1)
    assert "  shapes — Geometry helpers. [UNIT, area, Square]" in text


def test_in_memory_changes_are_marked(project, rt):
    """A patched module and the changed definition carry the * mark; virtual ones +."""
    rt.patch(
        f"{project.pkg}.shapes.area",
        "def area(radius: float) -> float:\n    return 3.0 * radius ** 2\n",
    )
    rt.patch_module(
        f"{project.pkg}.fresh", '"""Made in memory."""\n\ndef new() -> int:\n    return 1\n'
    )
    text = inspect_module(project.pkg, depth=2)
    assert "  shapes * — Geometry helpers." in text
    assert "    area(radius: float) -> float * :" in text
    assert "    class Square :" in text and "class Square *" not in text
    assert "  fresh + — Made in memory." in text


def test_unknown_member_suggests_close_matches(project, rt):
    """A wrong member path raises TargetNotFound with close matches."""
    with pytest.raises(TargetNotFound, match="Square"):
        inspect_module(f"{project.pkg}.shapes.Squar")


def test_view_source_numbers_the_in_memory_source(project, rt):
    """view_source shows in-memory text with the module's own line numbers."""
    rt.patch(
        f"{project.pkg}.shapes.Square.area",
        "def area(self) -> float:\n    return self.side * self.side\n",
    )
    text = view_source(f"{project.pkg}.shapes.Square.area")
    assert text.splitlines()[1:] == [
        "23     def area(self) -> float:",
        "24         return self.side * self.side",
    ]
    assert text.startswith(f"# {project.pkg}.shapes:23-24 of 32") and " *" in text.splitlines()[0]


def test_view_source_of_declared_method_shows_active_impl(project, rt):
    """A declared method shows the declaration and then the active @impl body."""
    text = view_source(f"{project.pkg}.contracts.Greeter.greet")
    assert "11     def greet(self, loud: bool = False) -> str:" in text
    assert f"# active @impl: {project.pkg}.bodies:8" in text
    assert " 8 @forwardpy.impl(Greeter.greet)" in text and "return text.upper()" in text
    stub = view_source(f"{project.pkg}.contracts.Greeter.part")
    assert "# no @impl registered: the method is a stub" in stub


def test_view_source_window_and_truncation_marker(project, rt):
    """start/end select lines; a long module is cut with the start to ask for next."""
    window = view_source(f"{project.pkg}.shapes", start=5, end=6)
    assert window.splitlines()[1:] == ["5 UNIT = 1.0", "6 "]
    body = "\n".join(f"X{i} = {i}" for i in range(3000)) + "\n"
    rt.patch_module(f"{project.pkg}.big", body)
    text = view_source(f"{project.pkg}.big")
    assert len(text) <= 8000
    last = int(text.splitlines()[-2].split()[0])
    assert text.endswith(f"not shown; view_source('{project.pkg}.big', start={last + 1})]")


def test_inspect_liveforge_lists_mapped_subpackages():
    """liveforge's mapped sub-packages appear whether or not they are imported."""
    with using_runtime(Runtime(project_root=".")):
        text = inspect_module("liveforge", depth=1)
    for name in ("kernel/", "declarations/", "impls/", "tools/"):
        assert f"\n  {name}" in text


def test_oversized_tree_is_shortened_and_says_so(project, rt):
    """A tree over the limit drops collapsed name lists (then levels) and says what it did."""
    for index in range(12):
        body = "".join(
            f"def function_number_{i}(argument: int) -> int:\n"
            f"    '''Function {i} of a long module.'''\n    return {i}\n\n"
            for i in range(40)
        )
        rt.patch_module(f"{project.pkg}.bulk{index}", f'"""Bulk module {index}."""\n' + body)
    text = inspect_module(project.pkg, depth=2)
    assert len(text) <= 8000
    assert text.endswith("inspect a sub-path for more]\n")
    assert "[shortened to fit: depth 1 instead of 2" in text
    assert "  bulk3 + — Bulk module 3." in text


def test_listing_does_not_depend_on_what_is_imported(project, rt):
    """Inspecting, then importing, then inspecting again differs only in the ~ marks."""
    before = inspect_module(f"{project.pkg}.later", depth=2)
    assert f"{project.pkg}.later.deep" not in sys.modules  # looking did not import it
    importlib.import_module(f"{project.pkg}.later.deep")
    after = inspect_module(f"{project.pkg}.later", depth=2)
    assert _without_marks(before) == _without_marks(after) and before != after


def _without_marks(text: str) -> list[str]:
    return [line.replace(" ~", "") for line in text.splitlines() if not line.startswith("marks:")]


def test_root_lists_the_project_packages(project, rt):
    """An empty path lists the project's top-level packages."""
    assert inspect_module("", depth=0).startswith(
        f"{project.pkg}/ — A fixture project. [bodies, contracts, later, shapes, tools, user"
    )


def test_many_submodules_collapse_to_one_line_of_names(project, rt):
    """When docs do not fit, a package lists its submodules inline, marks glued on."""
    rt.patch_module(f"{project.pkg}.many", '"""Many modules."""\n', is_package=True)
    doc = "A module with a long docstring that takes a good part of a line to read. " * 2
    for index in range(120):
        rt.patch_module(f"{project.pkg}.many.m{index:03}", f'"""{doc}"""\n\nX = {index}\n')
    text = inspect_module(project.pkg, depth=2)
    assert len(text) <= 8000
    assert "  many/ + — Many modules. [m000+, m001+, m002+," in text
    assert text.endswith(
        "[shortened to fit: submodules of packages listed by name only; "
        "inspect a sub-path for more]\n"
    )


def test_a_star_re_exported_name_is_viewed_where_it_is_defined(project, rt):
    """view_source and inspect_module of `pkg.name`, bound by `from .x import *` in the
    package, show the definition in the module that defines it."""
    project.write(f"{project.pkg}/recipes.py", "def take(n, items):\n    return items[:n]\n")
    init = project.root / project.pkg / "__init__.py"
    init.write_text(init.read_text() + "from .recipes import *\n")
    sys.modules.pop(project.pkg, None)
    importlib.import_module(project.pkg)
    text = view_source(f"{project.pkg}.take")
    assert f"# {project.pkg}.recipes:1-2" in text and "def take(n, items):" in text
    assert "take(n, items)" in inspect_module(f"{project.pkg}.take")


def test_a_module_reached_through_another_modules_attribute_is_viewed_where_it_lives(rt):
    """`os.path` is `posixpath` bound in `os`: inspecting it and viewing `os.path.join`
    show posixpath and its `join`, as Python resolves them."""
    assert "posixpath" in inspect_module("os.path").splitlines()[0]
    text = view_source("os.path.join")
    assert "posixpath" in text.splitlines()[0] and "def join(" in text
