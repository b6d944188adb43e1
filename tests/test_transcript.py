"""Transcript values, JSON round-trip and the pairing check (I3)."""

from __future__ import annotations

import pytest

from tests.scenario import TOOLS
from warmloop import Agent, ScriptedModel, call
from warmloop.errors import PairingError
from warmloop.providers.chat_format import ChatRenderer
from warmloop.transcript import (
    AssistantTurn,
    Meta,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    Transcript,
    UserText,
    check_pairing,
)


def sample() -> Transcript:
    return Transcript(
        [
            SystemText("sys"),
            UserText("tâche ✓"),
            AssistantTurn(
                text="hm",
                reasoning="think",
                tool_calls=(ToolCall("c1", "lookup", '{"key":  "a" }'),),
                provider_details={"anthropic": {"content": [{"type": "thinking", "x": 1.5}]}},
            ),
            ToolResult("c1", "lookup", "value", is_error=False),
            Summary("earlier", 2, 4),
            Notice("new tool", only_tool="lookup"),
        ],
        id="t_fixed",
        conversation="c_1",
        revision=3,
        meta=Meta(created_at=1.5, last_request_at=2.25, model="openai:gpt-5", parent="t_0"),
    )


def test_dump_load_round_trips_exactly() -> None:
    transcript = sample()
    loaded = Transcript.load(transcript.dump())
    assert loaded == transcript
    assert loaded.dump() == transcript.dump()
    assert loaded.messages[2].tool_calls[0].arguments == '{"key":  "a" }'  # type: ignore[union-attr]


def test_loaded_transcript_renders_byte_identical_requests() -> None:
    run = Agent(
        ScriptedModel([call("lookup", key="k"), call("add", a=1, b=2), call("submit", answer="x")]),
        TOOLS,
    ).run_sync("task")
    loaded = Transcript.load(run.transcript.dump())
    specs = (*[t.spec for t in TOOLS],)
    original = ChatRenderer("m").render(run.transcript, specs)
    again = ChatRenderer("m").render(loaded, specs)
    assert again.payload == original.payload
    assert again.stream == original.stream


def test_messages_are_frozen_values() -> None:
    a, b = UserText("x"), UserText("x")
    assert a == b
    with pytest.raises(AttributeError):
        a.text = "y"  # type: ignore[misc]


def turn(*ids: str) -> AssistantTurn:
    return AssistantTurn(tool_calls=tuple(ToolCall(i, "t", "{}") for i in ids))


def result(call_id: str) -> ToolResult:
    return ToolResult(call_id, "t", "ok")


def test_pairing_accepts_results_in_order_and_an_open_last_turn() -> None:
    check_pairing([UserText("q"), turn("a", "b"), result("a"), result("b"), turn("c")])


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([turn("a"), UserText("x")], "has no result"),
        ([turn("a", "b"), result("b"), result("a")], "expected the result of 'a'"),
        ([turn("a"), result("a"), result("a")], "answers no open call"),
        ([turn("a"), turn("b")], "new assistant turn"),
        ([turn("a", "a")], "duplicate"),
        ([turn("a"), result("a"), turn("a")], "duplicate"),
        ([turn("a", "b"), result("a")], "has no result"),
    ],
)
def test_pairing_rejects_broken_sequences(messages: list[object], problem: str) -> None:
    with pytest.raises(PairingError, match=problem):
        check_pairing(messages)  # type: ignore[arg-type]
