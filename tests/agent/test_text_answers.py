"""A plain-text reply is the answer where the output is text (issue 45): the default
`answer: str` and `outputs=str` take it as pydantic-ai takes a `str` output; named fields
and typed outputs still need `submit`, so a reply in words goes to the extract step."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from warmloop import Agent, ExtractFailed, ScriptedModel, call
from warmloop.messages import Message, UserText


def test_a_text_reply_is_the_default_answer() -> None:
    run = Agent(ScriptedModel(["It is 42."])).run_sync("task")
    assert run.output == "It is 42."
    assert run.outputs.model_dump() == {"answer": "It is 42."}
    assert not run.extracted
    assert [m.kind for m in run.transcript] == ["system", "user", "assistant"]


def test_a_text_reply_is_a_str_output() -> None:
    run = Agent(ScriptedModel(["forty-two"]), outputs=str).run_sync("task")
    assert run.output == "forty-two"


@pytest.mark.parametrize("outputs", [{"answer": str}, int], ids=["named", "int"])
def test_a_text_reply_is_no_answer_where_the_output_is_not_text(
    outputs: type[int] | dict[str, type],
) -> None:
    model = ScriptedModel(["It is 42.", "Still words."])
    with pytest.raises(ExtractFailed, match="never called submit"):
        Agent(model, outputs=outputs).run_sync("task")


def test_an_empty_reply_is_no_answer() -> None:
    run = Agent(ScriptedModel(["  ", call("submit", answer="late")])).run_sync("task")
    assert run.extracted
    assert run.output == "late"


def test_the_output_check_refuses_a_text_answer_and_the_extract_step_follows() -> None:
    def grounded(outputs: BaseModel, messages: Sequence[Message]) -> str | None:
        return "Read a file first." if len(messages) < 4 else None

    model = ScriptedModel(["A guess.", "The answer."])
    run = Agent(model, check_outputs=grounded).run_sync("task")
    assert run.output == "The answer."
    assert run.extracted  # the extract step is never refused
    prompt = run.transcript.messages[-2]
    assert isinstance(prompt, UserText)
    assert "Read a file first." in prompt.text
