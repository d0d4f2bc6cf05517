"""A tool's JSON schema and argument validation, both derived from its signature.

The signature and the docstring are the one source of truth: parameter types and defaults
come from the annotations, descriptions from the docstring's ``Args:`` section, and pydantic
turns them into a JSON schema and a validator. Nothing is written twice.

    >>> def greet(name: str, times: int = 1) -> str:
    ...     '''Say hello.
    ...
    ...     Args:
    ...         name: who to greet
    ...     '''
    >>> ToolSchema.of(greet).input_schema["properties"]["name"]
    {'description': 'who to greet', 'type': 'string'}
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic

from liveforge.kernel.errors import LiveforgeError

__all__ = ["ArgumentError", "GivenSchema", "ToolDefinitionError", "ToolSchema", "parse_docstring"]

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Example|"
    r"Examples|Note|Notes)\s*:\s*$"
)
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class ToolDefinitionError(LiveforgeError, TypeError):
    """A function cannot be a tool: a parameter has no usable type annotation."""

    def __init__(self, message: str, *, tool: str, parameter: str = "") -> None:
        super().__init__(message)
        self.tool = tool
        self.parameter = parameter


class ArgumentError(LiveforgeError, ValueError):
    """Arguments given to a tool do not fit its signature; the message is meant for a model."""

    def __init__(self, message: str, *, tool: str, problems: list[str]) -> None:
        super().__init__(message)
        self.tool = tool
        self.problems = problems


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument descriptions.

    The description is the text before the first section header; argument descriptions come
    from the ``Args:`` section, continuation lines (indented deeper) joined with spaces.
    """
    description: list[str] = []
    arg_lines: list[str] = []
    section: str | None = None
    for line in inspect.cleandoc(doc or "").splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1)
        elif section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters") and line.strip():
            arg_lines.append(line)
    return "\n".join(description).strip(), _parse_args(arg_lines)


def _parse_args(lines: list[str]) -> dict[str, str]:
    """``name: text`` entries at the section's indentation; deeper lines continue them."""
    if not lines:
        return {}
    entry_indent = min(len(line) - len(line.lstrip()) for line in lines)
    args: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        match = _ARG_LINE.match(line.strip())
        if match and len(line) - len(line.lstrip()) == entry_indent:
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return args


@dataclass(frozen=True)
class ToolSchema:
    """The model-facing description of a callable: name, description, JSON schema, validator."""

    name: str
    description: str
    input_schema: dict[str, Any]
    model: type[pydantic.BaseModel]
    signature: str

    @classmethod
    def of(cls, func: Callable[..., Any], *, name: str | None = None) -> ToolSchema:
        """Derive the schema of ``func`` from its signature and docstring.

        Raises ToolDefinitionError when a parameter lacks an annotation or has one that
        cannot be expressed in JSON schema (for example an arbitrary class).
        """
        tool = name or func.__name__
        description, arg_docs = parse_docstring(func.__doc__)
        fields = _fields(func, tool, arg_docs)
        config = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False)
        try:
            model = pydantic.create_model(f"{tool}_arguments", __config__=config, **fields)
            raw = model.model_json_schema()
        except (
            pydantic.PydanticSchemaGenerationError,
            pydantic.PydanticUserError,
            TypeError,
        ) as exc:
            raise ToolDefinitionError(
                f"tool {tool!r}: its parameters cannot be described in JSON schema ({exc}). "
                "Use str, int, float, bool, Literal, Enum, list/dict of those, or Optional.",
                tool=tool,
            ) from exc
        schema = _compact(raw)
        return cls(tool, description, schema, model, _render_signature(tool, schema))

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check ``arguments`` and return them converted to the declared types.

        Raises ArgumentError naming each bad argument, what was expected and what was given.
        """
        if not isinstance(arguments, dict):
            raise ArgumentError(
                f"{self.name}: arguments must be a JSON object, got {_given(arguments)}. "
                f"Call it as {self.signature}.",
                tool=self.name,
                problems=["<root>"],
            )
        try:
            parsed = self.model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = [_describe(err, self.input_schema) for err in exc.errors()]
            text = "\n".join(f"- {p}" for p in problems)
            raise ArgumentError(
                f"bad arguments for {self.name}:\n{text}\nexpected: {self.signature}",
                tool=self.name,
                problems=problems,
            ) from None
        return {key: getattr(parsed, key) for key in type(parsed).model_fields}


class _AnyArguments(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")


@dataclass(frozen=True)
class GivenSchema(ToolSchema):
    """The schema of a tool defined elsewhere (an MCP server's tool): its JSON schema is
    passed on as given, and `validate` checks only what every JSON schema object states —
    an object, its required keys, no unknown keys when ``additionalProperties`` is false.
    The tool's owner checks the rest and answers a bad call with an error the model reads.
    """

    @classmethod
    def given(cls, name: str, description: str, input_schema: dict[str, Any]) -> GivenSchema:
        """The schema of tool `name` as its owner describes it."""
        schema = dict(input_schema) if input_schema.get("type") == "object" else {}
        schema = {"type": "object", "properties": {}, **schema}
        args = ", ".join(f"{key}=..." for key in schema["properties"])
        return cls(name, description, schema, _AnyArguments, f"{name}({args})")

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check the shape the schema states; return the arguments unchanged."""
        if not isinstance(arguments, dict):
            raise ArgumentError(
                f"{self.name}: arguments must be a JSON object, got {_given(arguments)}.",
                tool=self.name,
                problems=["<root>"],
            )
        known = self.input_schema.get("properties", {})
        problems = [
            f"{key}: required, missing"
            for key in self.input_schema.get("required", [])
            if key not in arguments
        ]
        if self.input_schema.get("additionalProperties") is False:
            problems += [f"{key}: not a parameter" for key in arguments if key not in known]
        if problems:
            text = "\n".join(f"- {p}" for p in problems)
            raise ArgumentError(
                f"bad arguments for {self.name}:\n{text}\nexpected: {self.signature}",
                tool=self.name,
                problems=problems,
            )
        return dict(arguments)


def _fields(func: Callable[..., Any], tool: str, arg_docs: dict[str, str]) -> dict[str, Any]:
    """pydantic field definitions for each parameter of ``func``."""
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:  # unresolvable forward references surface as several types
        raise ToolDefinitionError(
            f"tool {tool!r}: its annotations cannot be resolved ({exc}).", tool=tool
        ) from exc
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {tool!r}: *{param.name} cannot be described; list each parameter.",
                tool=tool,
                parameter=param.name,
            )
        if param.name not in hints:
            raise ToolDefinitionError(
                f"tool {tool!r}: parameter {param.name!r} has no type annotation; add one.",
                tool=tool,
                parameter=param.name,
            )
        default = ... if param.default is param.empty else param.default
        field = pydantic.Field(default, description=arg_docs.get(param.name) or None)
        fields[param.name] = (hints[param.name], field)
    return fields


def _compact(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline ``$defs`` and drop titles: smaller, and the same for every provider."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            return {**walk(target), **walk({k: v for k, v in node.items() if k != "$ref"})}
        out = {k: walk(v) for k, v in node.items() if k not in ("title", "$defs", "properties")}
        if "properties" in node:
            out["properties"] = {name: walk(sub) for name, sub in node["properties"].items()}
        return out

    compact = walk(schema)
    compact.pop("additionalProperties", None)
    for name, prop in compact.get("properties", {}).items():
        compact["properties"][name] = _optional(prop)
    compact.setdefault("properties", {})
    rest = {k: v for k, v in compact.items() if k not in ("type", "properties")}
    return {"type": "object", "properties": compact["properties"], **rest}


def _optional(prop: dict[str, Any]) -> dict[str, Any]:
    """``X | None = None`` is simply an optional X: the model omits it to mean None."""
    options = prop.get("anyOf")
    if prop.get("default", ...) is not None or not isinstance(options, list) or len(options) != 2:
        return prop
    kept = [option for option in options if option != {"type": "null"}]
    if len(kept) != 1:
        return prop
    rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**kept[0], **rest}


def _render_signature(name: str, schema: dict[str, Any]) -> str:
    """``name(path: string, depth: integer = 2)`` in the schema's own vocabulary."""
    params = []
    for param, sub in schema["properties"].items():
        text = f"{param}: {_type_text(sub)}"
        if "default" in sub:
            text += f" = {json.dumps(sub['default'])}"
        elif param not in schema.get("required", []):
            text += " = null"
        params.append(text)
    return f"{name}({', '.join(params)})"


def _type_text(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(value) for value in schema["enum"])
    if "anyOf" in schema:
        return "|".join(_type_text(option) for option in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array[{_type_text(schema.get('items', {}))}]"
    if kind == "object" and "additionalProperties" in schema:
        return f"object[string, {_type_text(schema['additionalProperties'])}]"
    return str(kind)


def _given(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _describe(error: Any, schema: dict[str, Any]) -> str:
    """One line per pydantic error: which argument, what was expected, what was given."""
    loc = ".".join(str(part) for part in error["loc"]) or "<arguments>"
    kind = error["type"]
    if kind == "missing":
        return f"{loc}: required argument is missing"
    if kind == "extra_forbidden":
        known = ", ".join(schema.get("properties", {})) or "none"
        return f"{loc}: unexpected argument (known arguments: {known})"
    return f"{loc}: {error['msg']}; given {_given(error.get('input'))}"
