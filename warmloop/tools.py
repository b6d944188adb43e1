"""Tools from typed Python functions, their full and compact renderings, and a Toolbox.

Execution never raises into the loop: bad arguments, unknown tools, exceptions inside a
tool and oversized results all come back as a `ToolResult` the model can act on.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from warmloop.errors import ConfigurationError
from warmloop.transcript import JsonValue, ToolCall, ToolResult

ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]
DEFAULT_MAX_RESULT_CHARS = 20_000


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told about a tool: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, JsonValue]
    grammar_parameters: dict[str, JsonValue] | None = None
    """A stricter argument schema for constrained decoding only (e.g. an enum of the paths
    that exist); never rendered to a model, so it can narrow a local model's choices
    without changing any prompt. None: the grammar follows `parameters`."""

    def full(self) -> dict[str, JsonValue]:
        """The full rendering, shown the first time a model sees the tool."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def compact(self) -> str:
        """The compact rendering: name, argument names and types (`?` marks optional)."""
        props: Mapping[str, Any] = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", []))
        args = [
            f"{name}{'' if name in required else '?'}: {schema_type(schema)}"
            for name, schema in props.items()
        ]
        return f"{self.name}({', '.join(args)})"


def schema_type(schema: Mapping[str, Any]) -> str:
    """A short type name for a JSON schema fragment (`string`, `array[integer]`, `a | b`)."""
    if "anyOf" in schema:
        return " | ".join(schema_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array" and "items" in schema:
        return f"array[{schema_type(schema['items'])}]"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return str(kind)


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's auto-generated titles: noise on the wire, and they carry no meaning."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def _argument_hints(function: ToolFunction, tool_name: str) -> dict[str, Any]:
    """Resolved annotations of the arguments only: a return type that names a local class
    (unresolvable under `from __future__ import annotations`) must not break the tool."""
    hints: dict[str, Any] = {}
    namespace = getattr(function, "__globals__", {})
    for name, annotation in inspect.get_annotations(function).items():
        if name == "return":
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # what typing.get_type_hints does
            except NameError as exc:
                raise ConfigurationError(
                    f"tool {tool_name!r}: cannot resolve the type of {name!r} ({exc}); "
                    "define that type at module level"
                ) from exc
        hints[name] = annotation
    return hints


@dataclass(frozen=True)
class Tool:
    """A callable tool: its spec, the argument model that validates calls, and the function."""

    spec: ToolSpec
    args_model: type[BaseModel]
    function: ToolFunction = field(repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def from_function(
        cls, function: ToolFunction, *, name: str | None = None, description: str | None = None
    ) -> Tool:
        """Derive the argument schema from type hints and the description from the docstring."""
        tool_name = name or function.__name__
        if not tool_name.isidentifier():
            raise ConfigurationError(f"tool name {tool_name!r} must be a Python identifier")
        text = description or inspect.getdoc(function)
        if not text:
            raise ConfigurationError(f"tool {tool_name!r} needs a docstring or a description")
        hints = _argument_hints(function, tool_name)
        fields: dict[str, Any] = {}
        for param in inspect.signature(function).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ConfigurationError(f"tool {tool_name!r}: *args/**kwargs are not supported")
            if param.name not in hints:
                raise ConfigurationError(
                    f"tool {tool_name!r}: argument {param.name!r} needs a type hint"
                )
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (hints[param.name], default)
        model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
        parameters = _clean_schema(model.model_json_schema())
        return cls(ToolSpec(tool_name, text, parameters), model, function)


@overload
def tool(function: ToolFunction, /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[ToolFunction], Tool]: ...
def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Decorator: `@tool` or `@tool(name=..., description=...)` turns a function into a Tool."""
    if function is not None:
        return Tool.from_function(function)
    return lambda f: Tool.from_function(f, name=name, description=description)


def stringify(value: object) -> str:
    """A tool's return value as the text the model sees."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if value is None:
        return "(no output)"
    return json.dumps(value, ensure_ascii=False, default=str)


def truncate(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters with a marker that says what was dropped."""
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[truncated: showing {limit} of {len(text)} characters; "
        "ask for a smaller part]"
    )


def describe_validation_error(error: ValidationError) -> str:
    """A one-line-per-problem account of a pydantic validation error."""
    lines = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(arguments)"
        lines.append(f"- {where}: {item['msg']}")
    return "\n".join(lines)


def parse_arguments(raw: str) -> dict[str, Any]:
    """Decode a tool call's raw argument string into an object; ValueError says why not."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


class Toolbox:
    """An ordered set of tools with unique names; executes calls into ToolResults."""

    def __init__(
        self, tools: Iterable[Tool | ToolFunction] = (), *, max_result_chars: int | None = None
    ) -> None:
        self.max_result_chars = max_result_chars or DEFAULT_MAX_RESULT_CHARS
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.add(item if isinstance(item, Tool) else Tool.from_function(item))

    def add(self, item: Tool) -> None:
        """Add a tool; a duplicate name is a configuration error."""
        if item.name in self._tools:
            raise ConfigurationError(f"two tools are named {item.name!r}; names must be unique")
        self._tools[item.name] = item

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def error(self, call: ToolCall, message: str) -> ToolResult:
        return ToolResult(call.id, call.name, message, is_error=True)

    def validate(self, call: ToolCall) -> tuple[Tool, BaseModel] | ToolResult:
        """The tool and its validated arguments, or the error result to send back."""
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(self._tools) or "(none)"
            return self.error(call, f"Unknown tool {call.name!r}. Available tools: {known}.")
        try:
            args = found.args_model.model_validate(parse_arguments(call.arguments))
        except ValueError as exc:  # ValidationError is a ValueError
            detail = (
                describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            )
            return self.error(
                call,
                f"Invalid arguments for {call.name}:\n{detail}\nExpected: {found.spec.compact()}",
            )
        return found, args

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run one call. Never raises for anything the tool or the model did."""
        checked = self.validate(call)
        if isinstance(checked, ToolResult):
            return checked
        found, args = checked
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        try:
            if inspect.iscoroutinefunction(found.function):
                value = await found.function(**kwargs)
            else:
                value = await asyncio.to_thread(found.function, **kwargs)
        except Exception as exc:  # a tool's failure is the model's information
            return self.error(call, f"{call.name} failed: {type(exc).__name__}: {exc}")
        return ToolResult(call.id, call.name, truncate(stringify(value), self.max_result_chars))
