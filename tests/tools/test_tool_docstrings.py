"""Docstrings become lean schemas: the summary describes the tool, each argument documents
its own parameter, and the Args/Returns/Raises blocks stay out of the description."""

from __future__ import annotations

import json
from typing import Annotated, Any

import openai
import pytest
from pydantic import BaseModel, Field, create_model

from warmloop import ConfigurationError, Tool, tool
from warmloop.providers.openai.chat_format import wire_tools
from warmloop.wire.stream import dumps


def google(path: str, start: int = 1, end: int | None = None) -> str:
    """Read a file.

    Lines come back numbered.

    Args:
        path: The file, relative to the workspace root.
        start: First line to show (1-based).
        end: Last line to show; the end of the file
            when omitted.

    Returns:
        The numbered lines.

    Raises:
        OSError: When the file cannot be read.
    """
    return path


def numpy(path: str, start: int = 1, end: int | None = None) -> str:
    """Read a file.

    Lines come back numbered.

    Parameters
    ----------
    path : str
        The file, relative to the workspace root.
    start : int, optional
        First line to show (1-based).
    end : int or None, optional
        Last line to show; the end of the file
        when omitted.

    Returns
    -------
    str
        The numbered lines.
    """
    return path


def sphinx(path: str, start: int = 1, end: int | None = None) -> str:
    """Read a file.

    Lines come back numbered.

    :param path: The file, relative to the workspace root.
    :param start: First line to show (1-based).
    :param end: Last line to show; the end of the file
        when omitted.
    :returns: The numbered lines.
    :raises OSError: When the file cannot be read.
    """
    return path


@pytest.mark.parametrize("function", [google, numpy, sphinx])
def test_the_summary_describes_the_tool_and_each_argument_its_parameter(function: Any) -> None:
    spec = Tool.from_function(function, name="read").spec
    assert spec.description == "Read a file.\n\nLines come back numbered."
    props = spec.parameters["properties"]
    assert props["path"]["description"] == "The file, relative to the workspace root."
    assert props["start"]["description"] == "First line to show (1-based)."
    assert " ".join(props["end"]["description"].split()) == (
        "Last line to show; the end of the file when omitted."
    )
    wire = json.dumps(spec.full())
    for block in ("Args", "Parameters", ":param", "Returns", "numbered lines.", "OSError"):
        assert block not in wire


@pytest.mark.parametrize("function", [google, numpy, sphinx])
def test_the_compact_form_stays_names_and_types(function: Any) -> None:
    compact = Tool.from_function(function, name="read").spec.compact()
    assert compact == "read(path: string, start?: integer, end?: integer | null)"


def test_an_explicit_description_replaces_the_summary_but_arguments_stay_documented() -> None:
    spec = Tool.from_function(google, name="read", description="Show a file.").spec
    assert spec.description == "Show a file."
    assert spec.parameters["properties"]["path"]["description"].startswith("The file")


def test_a_field_description_in_the_annotation_wins_over_the_docstring() -> None:
    @tool
    def fetch(url: Annotated[str, Field(description="An https URL.")]) -> str:
        """Fetch a page.

        Args:
            url: Where to go.
        """
        return url

    assert fetch.spec.parameters["properties"]["url"]["description"] == "An https URL."


def test_a_docstring_with_only_an_args_block_has_no_summary() -> None:
    def only_args(x: int) -> int:
        """
        Args:
            x: A number.
        """
        return x

    with pytest.raises(ConfigurationError, match="docstring"):
        Tool.from_function(only_args)


def test_undocumented_arguments_get_no_description() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first.
        """
        return a + b

    props = add.spec.parameters["properties"]
    assert props["a"] == {"description": "The first.", "type": "integer"}
    assert props["b"] == {"type": "integer"}


class Point(BaseModel):
    x: int
    y: int


def test_no_generated_titles_anywhere_in_the_schema() -> None:
    @tool
    def move(to: Point, speed: float = 1.0) -> str:
        """Move somewhere."""
        return str(to)

    assert '"title"' not in json.dumps(move.spec.parameters)
    assert move.spec.compact() == "move(to: Point, speed?: number)"


def test_an_argument_that_pydantic_would_hide_is_refused() -> None:
    def hidden(_secret: int) -> int:
        """Uses a private-looking argument."""
        return _secret

    def config(model_config: int) -> int:
        """Uses pydantic's reserved name."""
        return model_config

    with pytest.raises(ConfigurationError, match="_secret"):
        Tool.from_function(hidden)
    with pytest.raises(ConfigurationError, match="model_config"):
        Tool.from_function(config)


class Opaque:
    """A plain class: pydantic cannot build a schema for it."""


def test_an_argument_type_without_a_schema_is_a_configuration_error() -> None:
    def use(thing: Opaque) -> str:
        """Uses a type pydantic cannot describe."""
        return "x"

    with pytest.raises(ConfigurationError, match="thing"):
        Tool.from_function(use)


def test_the_tool_block_is_no_larger_than_the_openai_sdk_helper() -> None:
    """The same function as `openai.pydantic_function_tool` renders it from a pydantic model
    whose fields carry the argument descriptions (benchmarks/tool_schemas.py counts tokens)."""
    ours = Tool.from_function(google, name="read").spec
    fields: dict[str, Any] = {
        "path": (str, Field(description="The file, relative to the workspace root.")),
        "start": (int, Field(1, description="First line to show (1-based).")),
        "end": (
            int | None,
            Field(None, description="Last line to show; the end of the file\nwhen omitted."),
        ),
    }
    model = create_model("read", __doc__="Read a file.\n\nLines come back numbered.", **fields)
    theirs = openai.pydantic_function_tool(model)
    assert len(dumps(wire_tools([ours]))) <= len(dumps([theirs]))
