"""Typed outputs (issue 32): each kind `outputs=` takes is submit's schema, is validated,
and comes back as `run.output` of the declared type; a wrong submit is told why."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypedDict

import pytest
from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, ToolResult, call
from warmloop.outputs import Outputs


class City(BaseModel):
    name: str
    population: int


@dataclass
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)


@dataclass
class Positive:
    value: int

    def __post_init__(self) -> None:
        if self.value <= 0:
            raise ValueError("value must be positive")


class Pair(TypedDict, total=False):
    left: str
    right: int


CASES: list[tuple[Any, dict[str, Any], Any]] = [
    (City, {"name": "Oslo", "population": 700}, City(name="Oslo", population=700)),
    (Point, {"x": 1}, Point(1)),
    (Pair, {"left": "a"}, {"left": "a"}),
    (int, {"output": 3}, 3),
    (str, {"output": "yes"}, "yes"),
    (float, {"output": 1.5}, 1.5),
    (bool, {"output": True}, True),
    (list[str], {"output": ["a", "b"]}, ["a", "b"]),
    (
        list[City],
        {"output": [{"name": "Rome", "population": 1}]},
        [City(name="Rome", population=1)],
    ),
    (dict[str, int], {"output": {"a": 1}}, {"a": 1}),
]


def run_with(kind: Any, *replies: Any) -> Any:
    return Agent(ScriptedModel(list(replies)), outputs=kind).run_sync("task")


@pytest.mark.parametrize(("kind", "arguments", "expected"), CASES)
def test_each_kind_is_validated_and_returned_as_declared(
    kind: Any, arguments: dict[str, Any], expected: Any
) -> None:
    run = run_with(kind, call("submit", **arguments))
    assert run.output == expected
    assert type(run.output) is type(expected)
    assert isinstance(run.outputs, BaseModel)  # as before: submit's validated arguments


def test_a_dataclass_output_holds_its_nested_types() -> None:
    run = run_with(list[Point], call("submit", output=[{"x": 1, "tags": ["t"]}]))
    assert run.output == [Point(1, 0, ["t"])]


def test_a_scalar_or_list_travels_in_one_named_argument_of_submit() -> None:
    assert Outputs(int).spec.compact() == "submit(output: integer)"
    assert Outputs(list[str]).spec.compact() == "submit(output: array[string])"
    assert Outputs(Point).spec.compact() == "submit(x: integer, y?: integer, tags?: array[string])"


def test_a_model_output_keeps_its_schema_bytes() -> None:
    # Declaring a model the same way as before must not move the cached prefix.
    schema = City.model_json_schema()
    schema.pop("title")
    for prop in schema["properties"].values():
        prop.pop("title")
    assert json.dumps(Outputs(City).spec.parameters) == json.dumps(schema)


@pytest.mark.parametrize(
    ("kind", "wrong", "right", "told"),
    [
        (int, {"output": "many"}, {"output": 2}, "output: Input should be a valid integer"),
        (list[str], {"output": "a"}, {"output": ["a"]}, "output: Input should be a valid list"),
        (Point, {"y": 1}, {"x": 1}, "x: Field required"),
        (City, {"name": "X", "population": "lots"}, {"name": "X", "population": 1}, "population"),
        (Positive, {"value": -1}, {"value": 1}, "value must be positive"),
    ],
)
def test_a_wrong_submit_is_refused_with_the_validation_error_told_to_the_model(
    kind: Any, wrong: dict[str, Any], right: dict[str, Any], told: str
) -> None:
    run = run_with(kind, call("submit", **wrong), call("submit", **right))
    refusals = [m for m in run.transcript.messages if isinstance(m, ToolResult) and m.is_error]
    assert len(refusals) == 1
    assert "submit was rejected" in refusals[0].content
    assert told in refusals[0].content
    assert run.output == Outputs(kind).output(run.outputs)


def test_without_outputs_the_output_is_the_answer_text() -> None:
    run = run_with(None, call("submit", answer="42"))
    assert run.output == "42"
    assert run.outputs.model_dump() == {"answer": "42"}


def test_named_fields_give_the_validated_model_as_output() -> None:
    run = run_with({"verdict": bool}, call("submit", verdict=True))
    assert run.output is run.outputs
    assert run.output.verdict is True
