"""Tools from functions, renderings, and execution that never crashes the loop."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from warmloop import ConfigurationError, Tool, Toolbox, tool
from warmloop.messages import ToolCall


@tool
def read(path: str, start: int = 1, end: int | None = None) -> str:
    """Read a file.

    Returns numbered lines."""
    return f"{path}:{start}:{end}"


@tool(name="boom", errors_to_model=True)
def explode(reason: str) -> str:
    """Always raises."""
    raise RuntimeError(reason)


@tool
async def big(n: int) -> str:
    """Returns n characters."""
    return "x" * n


def box(**kwargs: Any) -> Toolbox:
    return Toolbox([read, explode, big], **kwargs)


async def run(toolbox: Toolbox, name: str, arguments: str) -> tuple[str, bool]:
    result = await toolbox.execute(ToolCall("c", name, arguments))
    assert result.call_id == "c"
    return result.content, result.is_error


def test_schema_and_description_come_from_the_function() -> None:
    assert read.spec.description == "Read a file.\n\nReturns numbered lines."
    assert read.spec.parameters["required"] == ["path"]
    assert set(read.spec.parameters["properties"]) == {"path", "start", "end"}
    assert read.spec.compact() == "read(path: string, start?: integer, end?: integer | null)"
    assert explode.name == "boom"


def test_full_rendering_is_the_whole_spec() -> None:
    full = read.spec.full()
    assert full["name"] == "read"
    assert full["parameters"] == read.spec.parameters


def test_tool_needs_docstring_and_type_hints() -> None:
    def undocumented(x: int) -> int:
        return x

    def untyped(x) -> int:  # type: ignore[no-untyped-def]
        """Doc."""
        return 1

    with pytest.raises(ConfigurationError, match="docstring"):
        Tool.from_function(undocumented)
    with pytest.raises(ConfigurationError, match="type hint"):
        Tool.from_function(untyped)


def test_duplicate_tool_names_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="unique"):
        Toolbox([read, read])
    toolbox = Toolbox([read])
    with pytest.raises(ConfigurationError, match="two tools are named 'read'"):
        toolbox.add(Tool.from_function(explode.function, name="read"))


async def test_a_good_call_returns_the_value() -> None:
    assert await run(box(), "read", '{"path": "a", "start": 2}') == ("a:2:None", False)


async def test_bad_arguments_name_the_problem_and_the_expected_form() -> None:
    content, is_error = await run(box(), "read", '{"start": "x", "extra": 1}')
    assert is_error
    assert "path: Field required" in content
    assert "start:" in content
    assert "extra: Extra inputs are not permitted" in content
    assert "Expected: read(path: string" in content


async def test_invalid_json_arguments_are_a_tool_error() -> None:
    content, is_error = await run(box(), "read", '{"path": ')
    assert is_error
    assert "not valid JSON" in content
    content, is_error = await run(box(), "read", "[1]")
    assert is_error
    assert "must be a JSON object" in content


async def test_unknown_tool_lists_the_tool_names() -> None:
    content, is_error = await run(box(), "nope", "{}")
    assert is_error
    assert content == "Unknown tool 'nope'. Available tools: read, boom, big."


async def test_a_tool_that_raises_becomes_a_tool_error() -> None:
    content, is_error = await run(box(), "boom", '{"reason": "disk on fire"}')
    assert is_error
    assert content == "boom failed: RuntimeError: disk on fire"


async def test_structured_results_are_json() -> None:
    class Point(BaseModel):
        x: int

    @tool
    def where() -> Point:
        """Where."""
        return Point(x=1)

    @tool
    def listing() -> list[int]:
        """A list."""
        return [1, 2]

    toolbox = Toolbox([where, listing])
    assert await run(toolbox, "where", "") == ('{"x":1}', False)
    assert await run(toolbox, "listing", "{}") == ("[1, 2]", False)
