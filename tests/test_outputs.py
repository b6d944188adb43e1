"""Declared outputs: every declared field reaches `submit`, and bad declarations say why."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, BaseModel

from warmloop import ConfigurationError
from warmloop.messages import ToolCall, ToolResult
from warmloop.outputs import Outputs


def submit(**arguments: object) -> ToolCall:
    return ToolCall("c1", "submit", json.dumps(arguments))


def test_the_default_output_is_one_answer_string() -> None:
    outputs = Outputs()
    assert outputs.names == ["answer"]
    assert outputs.spec.compact() == "submit(answer: string)"


def test_declared_fields_become_submit_arguments_and_are_validated() -> None:
    outputs = Outputs({"verdict": bool, "reasons": list[str]})
    checked = outputs.validate(submit(verdict=True, reasons=["a"]))
    assert isinstance(checked, BaseModel)
    assert checked.model_dump() == {"verdict": True, "reasons": ["a"]}
    rejected = outputs.validate(submit(verdict="maybe"))
    assert isinstance(rejected, ToolResult)
    assert rejected.is_error
    assert "reasons: Field required" in rejected.content


@pytest.mark.parametrize("name", ["_x", "_", "__private", "model_config"])
def test_field_names_pydantic_would_drop_are_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        Outputs({"answer": str, name: int})


def test_an_empty_mapping_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="at least one field"):
        Outputs({})


@pytest.mark.parametrize("kind", [5, "Nope", object()])
def test_a_field_whose_type_is_not_a_type_is_refused(kind: Any) -> None:
    with pytest.raises(ConfigurationError, match="'answer'"):
        Outputs({"answer": kind})


@pytest.mark.parametrize("spec", [42, "answer", ["answer"], dict, set[int]])
def test_outputs_that_are_neither_a_type_submit_carries_nor_a_mapping_are_refused(
    spec: Any,
) -> None:
    with pytest.raises(ConfigurationError, match="pydantic model, a dataclass"):
        Outputs(spec)


def test_a_non_string_field_name_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="field names"):
        Outputs({1: str})  # type: ignore[dict-item]


def fussy(value: str) -> str:
    raise TypeError("wrong kind of error from a validator")


def test_a_validator_raising_type_error_is_a_rejected_submit() -> None:
    class Verdict(BaseModel):
        answer: Annotated[str, AfterValidator(fussy)]

    rejected = Outputs(Verdict).validate(submit(answer="yes"))
    assert isinstance(rejected, ToolResult)
    assert rejected.is_error
    assert "TypeError: wrong kind of error from a validator" in rejected.content


def test_a_model_whose_schema_cannot_be_built_is_refused() -> None:
    class Opaque:
        pass

    class Broken(BaseModel, arbitrary_types_allowed=True):
        thing: Opaque

    with pytest.raises(ConfigurationError, match="Broken"):
        Outputs(Broken)


def test_submitted_text_with_lone_surrogates_is_made_encodable() -> None:
    checked = Outputs().validate(ToolCall("c1", "submit", '{"answer": "a\\ud800b"}'))
    assert isinstance(checked, BaseModel)
    assert checked.model_dump() == {"answer": "a\ufffdb"}
