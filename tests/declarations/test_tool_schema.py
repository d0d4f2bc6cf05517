"""Tool schemas come from signatures and docstrings; arguments are validated against them."""

from __future__ import annotations

import enum
from typing import Literal, Optional

import pytest

from liveforge.declarations.tool_schema import (
    ArgumentError,
    ToolDefinitionError,
    ToolSchema,
    parse_docstring,
)


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


class Opaque:
    """A class JSON schema cannot describe."""


def every_kind(
    text: str,
    count: int,
    ratio: float,
    flag: bool,
    choice: Literal["a", "b"],
    mode: Mode,
    names: list[str],
    weights: dict[str, float],
    maybe: Optional[int] = None,  # noqa: UP045
    newer: str | None = None,
    levels: list[Literal["x", "y"]] = ["x"],  # noqa: B006
    picks: list[Mode] | None = None,
    depth: int = 2,
) -> str:
    """Exercise every supported annotation.

    A second paragraph of description.

    Args:
        text: some text
        count: how many; this description
            goes on to a second line
        depth: how deep
    Returns:
        nothing useful
    """
    return ""


def schema_of(func) -> dict:
    return ToolSchema.of(func).input_schema


def test_scalar_types_map_to_json_types():
    """str, int, float and bool become string, integer, number and boolean."""
    props = schema_of(every_kind)["properties"]
    assert [props[k]["type"] for k in ("text", "count", "ratio", "flag")] == [
        "string",
        "integer",
        "number",
        "boolean",
    ]


def test_literal_and_enum_become_inline_enums():
    """Literal and Enum parameters list their allowed values inline, with no $defs or $ref."""
    schema = schema_of(every_kind)
    assert schema["properties"]["choice"] == {"enum": ["a", "b"], "type": "string"}
    assert schema["properties"]["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    assert schema["properties"]["picks"]["items"]["enum"] == ["fast", "slow"]
    assert "$defs" not in str(schema) and "$ref" not in str(schema)


def test_containers_optional_and_defaults():
    """list/dict carry their item types; `X | None = None` is an optional X; defaults show."""
    props = schema_of(every_kind)["properties"]
    assert props["names"] == {"items": {"type": "string"}, "type": "array"}
    assert props["weights"] == {"additionalProperties": {"type": "number"}, "type": "object"}
    assert props["maybe"] == {"type": "integer"}
    assert props["newer"] == {"type": "string"}
    assert props["levels"]["default"] == ["x"]
    assert props["levels"]["items"] == {"enum": ["x", "y"], "type": "string"}


def test_required_nullable_parameter_keeps_null():
    """`X | None` without a default must be given, and null is an allowed value."""

    def f(x: int | None, y: int | None = None) -> str:
        return ""

    schema = ToolSchema.of(f)
    assert schema.input_schema["properties"]["x"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}]
    }
    assert schema.input_schema["required"] == ["x"]
    assert schema.signature == "f(x: integer|null, y: integer = null)"
    assert schema.validate({"x": None}) == {"x": None, "y": None}


def test_required_lists_parameters_without_defaults():
    """Only parameters without defaults are required."""
    assert schema_of(every_kind)["required"] == [
        "text",
        "count",
        "ratio",
        "flag",
        "choice",
        "mode",
        "names",
        "weights",
    ]


def test_descriptions_come_from_the_docstring():
    """The tool description is the docstring before its sections; Args describe parameters."""
    schema = ToolSchema.of(every_kind)
    assert schema.description == (
        "Exercise every supported annotation.\n\nA second paragraph of description."
    )
    props = schema.input_schema["properties"]
    assert props["text"]["description"] == "some text"
    assert props["count"]["description"] == "how many; this description goes on to a second line"
    assert props["depth"]["description"] == "how deep"
    assert "description" not in props["ratio"]


def test_no_titles_and_root_is_an_object():
    """The compact schema has root type object and no pydantic titles."""
    schema = schema_of(every_kind)
    assert schema["type"] == "object" and "title" not in str(schema)


def test_a_parameter_named_title_is_kept():
    """Dropping pydantic's titles never drops a parameter that happens to be called title."""

    def f(title: str) -> str:
        return title

    assert schema_of(f)["properties"] == {"title": {"type": "string"}}


def test_signature_line_uses_schema_vocabulary():
    """The expected-call line shows JSON types, enum values and defaults."""

    def f(path: str, depth: int = 2, mode: Mode = Mode.FAST) -> str:
        return path

    assert ToolSchema.of(f).signature == (
        'f(path: string, depth: integer = 2, mode: "fast"|"slow" = "fast")'
    )


def test_valid_arguments_are_converted_to_declared_types():
    """Validation fills defaults and converts JSON values (enum strings to members)."""
    values = ToolSchema.of(every_kind).validate(
        {
            "text": "t",
            "count": 3,
            "ratio": 1,
            "flag": True,
            "choice": "a",
            "mode": "slow",
            "names": [],
            "weights": {"w": 2},
        }
    )
    assert values["mode"] is Mode.SLOW and values["depth"] == 2 and values["ratio"] == 1.0


def test_bad_arguments_name_the_argument_expectation_and_given_value():
    """Each problem line says which argument, what was expected and what was given."""

    def f(path: str, depth: int = 2, mode: Literal["a", "b"] = "a") -> str:
        return path

    with pytest.raises(ArgumentError) as info:
        ToolSchema.of(f).validate({"depth": "deep", "mode": "c", "colour": 1})
    text = str(info.value)
    assert "- path: required argument is missing" in text
    assert "- depth: Input should be a valid integer" in text and "given 'deep' (str)" in text
    assert "- mode: Input should be 'a' or 'b'; given 'c' (str)" in text
    assert "- colour: unexpected argument (known arguments: path, depth, mode)" in text
    assert text.endswith('expected: f(path: string, depth: integer = 2, mode: "a"|"b" = "a")')
    assert info.value.problems and info.value.tool == "f"


def test_arguments_that_are_not_an_object_are_rejected():
    """A JSON list instead of an object is an ArgumentError, not a crash."""

    def f(x: int) -> str:
        return ""

    with pytest.raises(ArgumentError, match="must be a JSON object, got \\[1\\] \\(list\\)"):
        ToolSchema.of(f).validate([1])  # type: ignore[arg-type]


def test_missing_annotation_is_a_definition_error():
    """A parameter without a type hint cannot be described; the error names it."""

    def f(x) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(ToolDefinitionError) as info:
        ToolSchema.of(f)
    assert info.value.parameter == "x" and "no type annotation" in str(info.value)


def test_arbitrary_class_annotation_is_a_definition_error():
    """A type JSON schema cannot express is refused with a hint of what is supported."""

    def f(x: Opaque) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="Literal, Enum"):
        ToolSchema.of(f)


def test_var_arguments_are_refused():
    """*args cannot be described in a schema."""

    def f(*items: int) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match=r"\*items"):
        ToolSchema.of(f)


def test_parse_docstring_without_sections():
    """A docstring with no Args section is all description."""
    assert parse_docstring("Just this.\n\nAnd that.") == ("Just this.\n\nAnd that.", {})
    assert parse_docstring(None) == ("", {})


def test_a_given_schema_is_passed_on_and_checks_only_its_shape():
    """An MCP server's schema reaches the model as given; validation refuses what the
    schema itself rules out (not an object, a missing required key, an unknown key when
    additionalProperties is false) and passes the rest on unchanged."""
    from liveforge.declarations.tool_schema import GivenSchema

    raw = {
        "type": "object",
        "properties": {"item": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["item"],
        "additionalProperties": False,
    }
    schema = GivenSchema.given("mcp__shop__lookup", "Look up an item.", raw)
    assert schema.input_schema == raw
    assert schema.validate({"item": "pear", "count": "2"}) == {"item": "pear", "count": "2"}
    with pytest.raises(ArgumentError, match="item: required, missing"):
        schema.validate({"count": 1})
    with pytest.raises(ArgumentError, match="colour: not a parameter"):
        schema.validate({"item": "pear", "colour": "green"})
    with pytest.raises(ArgumentError, match="must be a JSON object"):
        schema.validate(["pear"])  # type: ignore[arg-type]
