"""The Toolbox discovers tool modules, describes them and dispatches calls safely."""

from __future__ import annotations

import importlib
import json
import sys
import types

import pytest

import liveforge.impls.toolbox  # noqa: F401  (registers the default bodies)
from liveforge.declarations.messages import ToolSpec
from liveforge.declarations.permissions import Policy
from liveforge.declarations.toolbox import Toolbox, ToolResult
from liveforge.impls.toolbox import project_tool_packages
from liveforge.kernel import Runtime


def make_box(project, runtime=None, limit: int = 8000) -> Toolbox:
    return Toolbox(
        runtime=runtime,
        packages=[f"{project.pkg}.tools"],
        limit=limit,
        policy=Policy(mode="full-auto"),
    )


def add_tool_module(project, name: str, source: str) -> None:
    project.write(f"{project.pkg}/tools/{name}.py", source)


def test_public_all_functions_of_public_modules_are_tools(project):
    """Only functions in __all__ of non-underscore modules become tools."""
    assert [t.name for t in make_box(project).tools()] == ["add"]


def test_specs_are_provider_neutral_toolspecs(project):
    """specs() gives ToolSpec objects built from the signature and docstring."""
    (spec,) = make_box(project).specs()
    assert isinstance(spec, ToolSpec)
    assert spec.name == "add" and spec.description == "Add two integers."
    assert spec.input_schema == {
        "type": "object",
        "properties": {
            "a": {"description": "first addend", "type": "integer"},
            "b": {"default": 1, "description": "second addend", "type": "integer"},
        },
        "required": ["a"],
    }


def test_call_runs_the_tool_with_validated_arguments(project):
    """A dict or a JSON text of arguments is validated, converted and passed to the tool."""
    box = make_box(project)
    assert box.call("add", {"a": 2, "b": 3}) == ToolResult("5")
    assert box.call("add", json.dumps({"a": "4"})) == ToolResult("5")


def test_bad_arguments_come_back_as_an_error_result(project):
    """A wrong type is reported to the model with the argument, expectation and given value."""
    result = make_box(project).call("add", {"a": "four"})
    assert result.is_error
    assert "- a: Input should be a valid integer" in result.text
    assert "given 'four' (str)" in result.text
    assert "expected: add(a: integer, b: integer = 1)" in result.text


def test_invalid_json_arguments_are_an_error_result(project):
    """Arguments text that is not JSON is reported, not raised."""
    result = make_box(project).call("add", "{a: 1")
    assert result.is_error and "not valid JSON" in result.text


def test_unknown_tool_lists_close_matches(project):
    """Calling a tool that does not exist names the close match and the available tools."""
    result = make_box(project).call("ad", {})
    assert result.is_error and "Did you mean add?" in result.text


def test_exception_in_a_tool_becomes_an_error_result_with_its_line(project):
    """A tool that raises returns the exception and the innermost frames."""
    add_tool_module(
        project,
        "broken",
        '''
        __all__ = ["divide"]


        def divide(a: int) -> str:
            """Divide one by a."""
            return str(1 / a)
        ''',
    )
    result = make_box(project).call("divide", {"a": 0})
    assert result.is_error
    assert result.text.startswith("divide raised ZeroDivisionError: division by zero")
    assert "return str(1 / a)" in result.text


def test_a_tool_running_past_its_timeout_is_interrupted(project):
    """A looping tool is stopped at the per-call timeout and reported as an error."""
    add_tool_module(
        project,
        "spin",
        '''
        __all__ = ["spin"]


        def spin() -> str:
            """Loop forever, swallowing ordinary exceptions."""
            while True:
                try:
                    pass
                except Exception:
                    pass
        ''',
    )
    result = make_box(project).call("spin", {}, timeout=0.3)
    assert result == ToolResult(
        "spin ran past its 0.3 s timeout and was interrupted; ask for less work or pass a "
        "larger timeout.",
        is_error=True,
    )


def test_results_are_bounded_by_the_toolbox_limit(project):
    """An oversized tool result is cut with a truncation marker."""
    add_tool_module(
        project,
        "loud",
        '''
        __all__ = ["loud"]


        def loud(lines: int) -> str:
            """Print many lines."""
            return "".join(f"row {i}\\n" for i in range(lines))
        ''',
    )
    result = make_box(project, limit=300).call("loud", {"lines": 500})
    assert len(result.text) <= 300 and "[... " in result.text and "not shown;" in result.text


def test_a_module_that_exists_only_in_memory_is_discovered(project):
    """A tool module present in sys.modules but not on disk is listed."""
    name = f"{project.pkg}.tools.virtual"
    module = types.ModuleType(name)
    exec(
        compile(
            '__all__ = ["hello"]\ndef hello() -> str:\n    """Hi."""\n    return "hi"\n',
            "<virtual>",
            "exec",
        ),
        module.__dict__,
    )
    box = make_box(project)
    box.tools()  # imports the package
    sys.modules[name] = module
    assert box.call("hello", {}) == ToolResult("hi")
    del sys.modules[name]
    assert box.call("hello", {}).is_error


def test_unusable_tools_are_reported_as_problems(project):
    """A tool with an unannotated parameter is left out and the reason is listed."""
    add_tool_module(
        project,
        "sloppy",
        """
        __all__ = ["sloppy", "CONSTANT"]
        CONSTANT = 3


        def sloppy(x) -> str:
            return str(x)
        """,
    )
    box = make_box(project)
    assert [t.name for t in box.tools()] == ["add"]
    problems = box.problems()
    assert any("sloppy.CONSTANT: listed in __all__ but not a function" in p for p in problems)
    assert any("parameter 'x' has no type annotation" in p for p in problems)


def test_to_block_answers_the_model_call():
    """A ToolResult converts to the provider-neutral tool_result block."""
    block = ToolResult("oops", is_error=True).to_block("call_1")
    assert (block.tool_use_id, block.content, block.is_error) == ("call_1", "oops", True)


def test_project_tool_packages_are_found_on_disk(project):
    """<pkg>/tools packages under the project root are the project's tool packages."""
    assert project_tool_packages(project.root) == [f"{project.pkg}.tools"]


@pytest.mark.parametrize("bad", ["[1, 2]", "3"])
def test_non_object_json_arguments_are_rejected(project, bad):
    """JSON that is not an object is an error result naming what was sent."""
    result = make_box(project).call("add", bad)
    assert result.is_error and "must be a JSON object" in result.text


MADE = '''
__all__ = ["triple", "changes"]

from liveforge.tools import runtime


def triple(x: int) -> str:
    """Three times x."""
    return str(3 * x)


def changes() -> str:
    """How many changes the runtime recorded."""
    return str(len(runtime().history()))
'''


def test_tool_module_patched_in_memory_appears_and_removed_tool_disappears(project):
    """patch_module creates a tool at once; dropping it from the source removes it at once."""
    rt = Runtime(project_root=project.root)
    box = make_box(project, runtime=rt)
    assert [t.name for t in box.tools()] == ["add"]
    rt.patch_module(f"{project.pkg}.tools.made", MADE)
    assert [t.name for t in box.tools()] == ["triple", "changes", "add"]  # module order
    assert box.call("triple", {"x": 4}) == ToolResult("12")
    assert box.call("changes", {}) == ToolResult("1")
    rt.patch_module(
        f"{project.pkg}.tools.made",
        MADE.replace('"triple", ', "").split("def triple")[0]
        + "def changes() -> str:\n    return 'gone'\n",
    )
    assert [t.name for t in box.tools()] == ["changes", "add"]
    assert box.call("triple", {"x": 4}).is_error


def test_rolling_back_a_created_tool_module_removes_its_tools(project):
    """Undoing the change that created a tool module in memory removes its tools at once."""
    rt = Runtime(project_root=project.root)
    box = make_box(project, runtime=rt)
    box.tools()
    rt.patch_module(f"{project.pkg}.tools.made", MADE)
    assert "triple" in [t.name for t in box.tools()]
    rt.rollback()
    assert [t.name for t in box.tools()] == ["add"]


def test_patched_tool_docstring_changes_its_spec(project):
    """Editing a tool in place (same function object) is reflected in its next spec."""
    rt = Runtime(project_root=project.root)
    box = make_box(project, runtime=rt)
    box.tools()
    rt.patch(
        f"{project.pkg}.tools.mathtools.add",
        'def add(a: int, b: int = 5) -> str:\n    """Sum."""\n    return str(a + b)\n',
    )
    (spec,) = box.specs()
    assert spec.description == "Sum." and spec.input_schema["properties"]["b"]["default"] == 5
    assert box.call("add", {"a": 1}) == ToolResult("6")


def test_builtin_and_project_tools_are_seen_together(project):
    """The default packages are liveforge.tools plus the project's own tools package."""
    box = Toolbox(runtime=Runtime(project_root=project.root), packages=[], limit=8000)
    names = [t.name for t in box.tools()]
    assert {"inspect_module", "view_source", "patch", "execute", "add"} <= set(names)
    assert box.problems() == []


def test_runtime_errors_from_core_tools_are_error_results(project):
    """A wrong dotted path comes back as TargetNotFound text with close matches."""
    importlib.import_module(f"{project.pkg}.shapes")
    box = Toolbox(
        runtime=Runtime(project_root=project.root), packages=["liveforge.tools"], limit=8000
    )
    result = box.call("view_source", {"path": f"{project.pkg}.shapes.Squar"})
    assert result.is_error
    assert result.text.startswith("view_source failed: TargetNotFound: ")
    assert f"close matches: {project.pkg}.shapes.Square" in result.text


def test_toolbox_limit_governs_the_tools_own_truncation(project):
    """A small toolbox limit makes view_source cut itself, keeping its start= hint."""
    importlib.import_module(f"{project.pkg}.shapes")
    box = Toolbox(
        runtime=Runtime(project_root=project.root), packages=["liveforge.tools"], limit=400
    )
    text = box.call("view_source", {"path": f"{project.pkg}.shapes"}).text
    assert len(text) <= 400
    assert f"not shown; view_source('{project.pkg}.shapes', start=" in text


def test_an_unmarked_tool_asks_and_a_failing_approver_refuses_without_raising(project):
    """A project tool without an effect counts as execute: in ask mode the approver is
    asked (with the arguments as the preview); an approver that raises refuses the call."""
    asked = []

    def approver(request):
        asked.append(request)
        if request.arguments["a"] == 0:
            raise RuntimeError("terminal closed")
        return True

    box = make_box(project)
    box.policy, box.approver = Policy(mode="ask"), approver
    assert box.call("add", {"a": 2}) == ToolResult("3")
    refused = box.call("add", {"a": 0})
    assert refused.is_error and "asking the user about add failed" in refused.text
    assert [(r.tool, r.effect) for r in asked] == [("add", "execute")] * 2
    assert '"a": 2' in asked[0].preview
    box.policy = Policy(mode="read-only")
    assert "refused by 'read-only' mode" in box.call("add", {"a": 1}).text and len(asked) == 2
