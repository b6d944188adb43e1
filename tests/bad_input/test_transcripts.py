"""Bad transcript files: truncated, not JSON or not UTF-8, a wrong version, missing and extra
fields, wrong types, forged ids, broken pairing, impossible folds, hostile nesting. Each is
one TranscriptError naming the fault; what does load continues as a history, intact."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.bad_input.harness import check_outcome, exercise
from warmloop import (
    Agent,
    AssistantTurn,
    ScriptedModel,
    SystemText,
    ToolCall,
    ToolResult,
    Transcript,
    TranscriptError,
    UserText,
    call,
)

GOOD = Transcript(
    [
        SystemText("Be brief."),
        UserText("Look up a."),
        AssistantTurn(tool_calls=(ToolCall("c1", "lookup", '{"key":"a"}'),)),
        ToolResult("c1", "lookup", "value"),
        AssistantTurn(tool_calls=(ToolCall("c2", "submit", '{"answer":"v"}'),)),
        ToolResult("c2", "submit", "Submitted."),
    ],
    id="t_good",
)
Data = dict[str, Any]


def data() -> Data:
    loaded: Data = json.loads(GOOD.dump())
    return loaded


def edited(change: Callable[[Data], object]) -> str:
    """The good transcript's JSON after `change` edits it in place."""
    value = data()
    change(value)
    return json.dumps(value)


def message(index: int, **fields: Any) -> Callable[[Data], object]:
    return lambda d: d["messages"][index].update(fields)


def drop(*path: Any) -> Callable[[Data], object]:
    def change(d: Data) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


def messages(*items: Any) -> Callable[[Data], object]:
    return lambda d: d.update(messages=list(items))


def nested(depth: int) -> str:
    """The good transcript with `depth` nested lists in an assistant turn's details."""
    marked = edited(message(2, provider_details={"x": "NEST"}))
    return marked.replace('"NEST"', "[" * depth + "]" * depth)


SYSTEM = {"text": "s", "kind": "system"}
USER = {"text": "u", "only_tool": "", "kind": "user"}


def assistant(*ids: str) -> Data:
    calls = [{"id": i, "name": "f", "arguments": "{}"} for i in ids]
    return {"text": "", "reasoning": "", "tool_calls": calls, "provider_details": {}} | {
        "kind": "assistant"
    }


def tool(call_id: str) -> Data:
    return {"call_id": call_id, "name": "f", "content": "r", "is_error": False} | {
        "kind": "tool_result"
    }


def summary(start: int, end: int) -> Data:
    return {"text": "sum", "start": start, "end": end, "kind": "summary"}


BAD: dict[str, tuple[str | bytes, str]] = {
    # Not a transcript at all.
    "empty": ("", "not valid JSON"),
    "blank": ("  \n", "not valid JSON"),
    "not-json": ("{", "not valid JSON"),
    "truncated": (GOOD.dump()[: len(GOOD.dump()) // 2], "not valid JSON"),
    "null": ("null", "not a warmloop transcript"),
    "list": ("[]", "not a warmloop transcript"),
    "number": ("42", "not a warmloop transcript"),
    "not-utf8": (b"\xff\xfe{}", "not UTF-8"),
    "utf8-bom": ("\ufeff" + GOOD.dump(), "not valid JSON"),
    "deeply-nested": ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
    # Versions and top-level fields.
    "wrong-version": (
        edited(lambda d: d.update(format="warmloop.transcript/3")),
        "expected format",
    ),
    "no-format": (edited(drop("format")), "not a warmloop transcript"),
    "missing-messages": (edited(drop("messages")), "missing ['messages']"),
    "missing-meta": (edited(drop("meta")), "missing ['meta']"),
    "extra-top-field": (edited(lambda d: d.update(extra=1)), "unexpected ['extra']"),
    "messages-not-a-list": (edited(lambda d: d.update(messages={})), "messages are not valid"),
    # Ids and revisions.
    "id-null": (edited(lambda d: d.update(id=None)), "transcript id None"),
    "id-path": (edited(lambda d: d.update(id="../../etc/passwd")), "is not allowed"),
    "id-too-long": (edited(lambda d: d.update(id="t" * 65)), "is not allowed"),
    "id-newline": (edited(lambda d: d.update(id="t_a\nb")), "is not allowed"),
    "conversation-forged": (edited(lambda d: d.update(conversation="a/b")), "is not allowed"),
    "revision-negative": (edited(lambda d: d.update(revision=-1)), "revision must be"),
    "revision-string": (edited(lambda d: d.update(revision="1")), "revision must be"),
    "revision-bool": (edited(lambda d: d.update(revision=True)), "revision must be"),
    "revision-float": (edited(lambda d: d.update(revision=1.0)), "revision must be"),
    # Messages of the wrong shape.
    "message-a-string": (edited(messages("hello")), "messages are not valid"),
    "unknown-kind": (edited(message(1, kind="wizard")), "messages are not valid"),
    "missing-text": (edited(drop("messages", 1, "text")), "Field required"),
    "extra-message-field": (edited(message(1, mood="happy")), "messages are not valid"),
    "text-null": (edited(message(1, text=None)), "messages are not valid"),
    "text-number": (edited(message(1, text=5)), "messages are not valid"),
    "call-id-null": (
        edited(lambda d: d["messages"][2]["tool_calls"][0].update(id=None)),
        "messages are not valid",
    ),
    "arguments-object": (
        edited(lambda d: d["messages"][2]["tool_calls"][0].update(arguments={})),
        "messages are not valid",
    ),
    "is-error-string": (edited(message(3, is_error="yes")), "messages are not valid"),
    "meta-wrong-type": (edited(lambda d: d["meta"].update(created_at="never")), "meta is not"),
    "meta-extra-field": (edited(lambda d: d["meta"].update(owner="x")), "meta is not valid"),
    # Pairing (I3) and folds.
    "result-without-call": (edited(messages(SYSTEM, USER, tool("x"))), "answers no open call"),
    "call-without-result": (
        edited(messages(SYSTEM, USER, assistant("a"), USER)),
        "has no result",
    ),
    "results-out-of-order": (
        edited(messages(SYSTEM, USER, assistant("a", "b"), tool("b"), tool("a"))),
        "expected the result of 'a'",
    ),
    "duplicate-call-ids": (
        edited(messages(SYSTEM, USER, assistant("a"), tool("a"), assistant("a"), tool("a"))),
        "duplicate tool call ids",
    ),
    "summary-backwards": (edited(messages(SYSTEM, USER, USER, summary(2, 1))), "start < end"),
    "summary-misplaced": (edited(messages(SYSTEM, USER, USER, USER, summary(1, 2))), "right after"),
    "summary-float-span": (
        edited(messages(SYSTEM, USER, USER, summary(1.0, 3))),  # type: ignore[arg-type]
        "messages are not valid",
    ),
    "provider-details-nested": (nested(100_000), "nested too deeply"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_transcript_is_one_clear_error(name: str) -> None:
    text, expected = BAD[name]
    with pytest.raises(TranscriptError) as caught:
        Transcript.load(text)
    assert expected in str(caught.value)
    assert len(str(caught.value)) < 2_000


FINE: dict[str, str] = {
    "version-1": json.dumps(
        {"format": "warmloop.transcript/1", "id": "t_old", "version": 0}
        | {"messages": data()["messages"]}
    ),
    "escaped-lone-surrogate": edited(message(1, text="bad \ud800 text")),
    "control-characters": edited(message(3, content="\x1b]52;c;ZXZpbA==\x07\x00")),
}


@pytest.mark.parametrize("name", list(FINE))
async def test_an_odd_but_valid_transcript_continues_intact(name: str) -> None:
    history = Transcript.load(FINE[name])
    model = ScriptedModel([call("submit", answer="again")])
    outcome = await exercise(Agent(model), "And now?", history=history)
    check_outcome(outcome, model=model, history_turns=2)
    assert outcome.transcript is not None
    assert outcome.transcript.messages[: len(history)] == history.messages
