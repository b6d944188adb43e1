"""An agent's output check: a refused submit is answered as submit's error, appended, bounded."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.messages import Message, ToolResult, UserText


@tool
def lookup(key: str) -> str:
    """Look up a key."""
    return f"{key} = 42"


def only_seen(outputs: BaseModel, messages: Sequence[Message]) -> str | None:
    """Refuses an answer that no tool result holds."""
    answer = str(outputs.model_dump()["answer"])
    results = [m for m in messages if isinstance(m, ToolResult) and m.name != "submit"]
    if any(answer in r.content for r in results):
        return None
    return f"{answer} is in no result; look it up first."


def agent(model: ScriptedModel, **kwargs: object) -> Agent:
    return Agent(model, [lookup], check_outputs=only_seen, **kwargs)  # type: ignore[arg-type]


def test_an_answer_the_run_has_read_is_accepted_at_once() -> None:
    model = ScriptedModel([call("lookup", key="a"), call("submit", answer="42")])
    run = agent(model).run_sync("what is a?")
    assert run.outputs.model_dump() == {"answer": "42"}
    assert run.steps == 2


def test_an_unread_answer_gets_a_correction_and_the_run_goes_on_appending() -> None:
    seen: list[Message] = []
    model = ScriptedModel(
        [
            call("lookup", key="a"),
            call("submit", answer="7"),
            call("lookup", key="b"),
            call("submit", answer="42"),
        ]
    )
    run = agent(model, on_message=seen.append).run_sync("what is a?")
    assert run.outputs.model_dump() == {"answer": "42"}
    refusal = run.transcript.messages[5]
    assert isinstance(refusal, ToolResult)
    assert refusal.name == "submit"
    assert refusal.is_error
    assert refusal.content == "7 is in no result; look it up first."
    # Append-only: every message was appended once, in order, and never changed after.
    assert seen == list(run.transcript)
    sent = [r.payload["messages"] for r in model.requests]
    assert all(later[: len(earlier)] == earlier for earlier, later in pairwise(sent))


def test_every_answer_is_checked_and_the_step_budget_ends_the_run() -> None:
    # Issue 37: the check refused once a run, so the next answer (the refused one with its
    # case changed, or a name in no file) was accepted unchecked.
    answers = [call("submit", answer="nowhere") for _ in range(4)]
    model = ScriptedModel([call("lookup", key="a"), *answers])
    run = agent(model, max_steps=4).run_sync("what is a?")
    errors = [m for m in run.transcript if isinstance(m, ToolResult) and m.is_error]
    assert len(errors) == 3  # steps 2-4 each submitted and each was refused
    assert run.extracted  # the extract step ends the run, and is never refused
    assert run.outputs.model_dump() == {"answer": "nowhere"}


def test_the_extract_step_is_never_refused() -> None:
    model = ScriptedModel([call("lookup", key="a"), call("submit", answer="nowhere")])
    run = agent(model, max_steps=1).run_sync("what is a?")
    assert run.extracted
    assert run.outputs.model_dump() == {"answer": "nowhere"}
    assert any(isinstance(m, UserText) and "submit" in m.text for m in run.transcript)
    assert not any(isinstance(m, ToolResult) and m.is_error for m in run.transcript)


def test_without_a_check_any_valid_answer_ends_the_run() -> None:
    model = ScriptedModel([call("lookup", key="a"), call("submit", answer="7")])
    run = Agent(model, [lookup]).run_sync("what is a?")
    assert run.outputs.model_dump() == {"answer": "7"}
