"""Loose checks of issue 13, item 16: misuse of the API is a ConfigurationError saying what
to change, a Thought may mention "Action:", and a turn whose call ids repeat gets fresh
ones (`Transcript.unique_calls`), so pairing holds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from warmloop import (
    Agent,
    AssistantTurn,
    ConfigurationError,
    ScriptedModel,
    ToolCall,
    ToolResult,
    Transcript,
    call,
    check_pairing,
    tool,
)
from warmloop.protocols import react_text


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


@pytest.mark.parametrize(
    "history",
    [[], ["a message"], "a transcript as text", {"messages": []}],
    ids=["empty-list", "list", "string", "dict"],
)
async def test_a_history_that_is_not_a_transcript_is_refused(history: Any) -> None:
    model = ScriptedModel([call("submit", answer="x")])
    with pytest.raises(ConfigurationError, match=r"history must be a Transcript \(e\.g\. run"):
        await Agent(model).run("Hi", history=history)
    assert model.requests == []


@pytest.mark.parametrize("steps", ["3", 3.0, 0, -1, True, None])
def test_max_steps_must_be_a_positive_int(steps: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_steps must be an integer >= 1"):
        Agent(ScriptedModel(), max_steps=steps)


@pytest.mark.parametrize("task", [{}, "", "   \n", None, 42, ["a"]])
async def test_an_empty_or_untyped_task_is_refused_before_any_request(task: Any) -> None:
    model = ScriptedModel([call("submit", answer="x")])
    with pytest.raises(ConfigurationError, match="task"):
        await Agent(model).run(task)
    assert model.requests == []


async def test_run_sync_inside_a_running_loop_says_to_await_run() -> None:
    agent = Agent(ScriptedModel([call("submit", answer="x")]))
    with pytest.raises(ConfigurationError, match=r"use await run\(\)"):
        agent.run_sync("Hi")


@pytest.mark.parametrize(
    "text",
    [
        'Thought: I will write the Action: line with the key.\nAction: {"tool": "lookup", '
        '"arguments": {"key": "a"}}',
        'Thought: first I planned Action: {"tool": "nope"} but no.\n'
        'Action: {"tool": "lookup", "arguments": {"key": "a"}}',
        'Thought: look it up. Action: {"tool": "lookup", "arguments": {"key": "a"}}',
        'Thought: t\n  Action: {"tool": "lookup", "arguments": {"key": "a"}}\n',
    ],
    ids=["mentions-action", "earlier-action-json", "same-line", "indented"],
)
def test_the_action_is_the_last_one_written(text: str) -> None:
    turn = react_text.parse(text, 3)
    assert turn.tool_calls == (ToolCall("call_3_0", "lookup", '{"key":"a"}'),)
    assert turn.text == text


def test_an_action_inside_the_arguments_is_not_taken_for_the_action() -> None:
    text = 'Thought: t\nAction: {"tool": "lookup", "arguments": {"key": "Action: {}"}}'
    turn = react_text.parse(text, 0)
    assert turn.tool_calls[0].arguments == '{"key":"Action: {}"}'


def test_a_reply_full_of_actions_costs_bounded_work() -> None:
    text = "Action: {" * 50_000
    with pytest.raises(react_text.ParseFailure, match="not valid JSON"):
        react_text.parse(text, 0)


async def test_a_turn_reusing_an_earlier_call_id_gets_the_next_free_one() -> None:
    def turn(call_id: str, name: str, arguments: str) -> AssistantTurn:
        return AssistantTurn(tool_calls=(ToolCall(call_id, name, arguments),))

    model = ScriptedModel(
        [turn("same", "lookup", '{"key": "a"}'), turn("same", "submit", '{"answer": "x"}')]
    )
    run = await Agent(model, tools=[lookup]).run("Go.")
    assert run.outputs.model_dump() == {"answer": "x"}
    calls = [c for m in run.transcript if isinstance(m, AssistantTurn) for c in m.tool_calls]
    assert [c.id for c in calls] == ["same", "same-2"]
    check_pairing(run.transcript.messages)
    assert Transcript.load(run.transcript.dump()) == run.transcript


async def test_duplicate_ids_within_one_turn_are_renamed_too() -> None:
    calls = (ToolCall("x", "lookup", '{"key": "a"}'), ToolCall("x", "lookup", '{"key": "b"}'))
    model = ScriptedModel([AssistantTurn(tool_calls=calls), call("submit", answer="y")])
    run = await Agent(model, tools=[lookup]).run("Go.")
    results = [m for m in run.transcript if isinstance(m, ToolResult)]
    answered = [(r.call_id, r.content) for r in results[:2]]
    assert answered == [("x", "value of a"), ("x-2", "value of b")]
    check_pairing(run.transcript.messages)


async def test_two_runs_of_one_agent_at_once_keep_separate_transcripts() -> None:
    model = ScriptedModel([call("lookup", key=k) for k in "ab"] + [call("submit", answer="x")] * 2)
    agent = Agent(model, tools=[lookup])
    first, second = await asyncio.gather(agent.run("One."), agent.run("Two."))
    for run in (first, second):
        check_pairing(run.transcript.messages)
        assert run.transcript.id != (second if run is first else first).transcript.id
    assert sum(len(r.requests) for r in (first, second)) == 4
