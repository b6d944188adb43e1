"""Loading a transcript validates everything and fails with one clear error; saving never
produces text that cannot be encoded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from warmloop import TranscriptError, WarmloopError
from warmloop.errors import PairingError
from warmloop.messages import AssistantTurn, SystemText, ToolCall, ToolResult, UserText
from warmloop.transcript import Transcript
from warmloop.transcript_file import dumps_message, message_from_json


def document(**overrides: Any) -> str:
    base: dict[str, Any] = {
        "format": "warmloop.transcript/2",
        "id": "t_1",
        "conversation": "c_1",
        "revision": 0,
        "meta": {},
        "messages": [{"kind": "system", "text": "sys"}, {"kind": "user", "text": "task"}],
    }
    base.update(overrides)
    return json.dumps({k: v for k, v in base.items() if v is not ...})


def result(call_id: str = "c") -> dict[str, Any]:
    return {"kind": "tool_result", "call_id": call_id, "name": "t", "content": "r"}


def assistant(*ids: str) -> dict[str, Any]:
    calls = [{"id": i, "name": "t", "arguments": "{}"} for i in ids]
    return {"kind": "assistant", "tool_calls": calls}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{nope", "not valid JSON"),
        ('{"messages": []}', "not a warmloop transcript"),
        (document(format="warmloop.transcript/9"), "not a warmloop transcript"),
        (document(id=...), "missing ['id']"),
        (document(extra=1), "unexpected ['extra']"),
        (document(id=None), "transcript id None is not allowed"),
        (document(id="../../etc/passwd"), "transcript id '../../etc/passwd' is not allowed"),
        (document(id="x" * 65), "is not allowed"),
        (document(conversation="a b"), "conversation id 'a b' is not allowed"),
        (document(revision=1.0), "revision must be an integer"),
        (document(revision=True), "revision must be an integer"),
        (document(revision=-1), "revision must be an integer"),
        (document(messages=[{"kind": "user", "text": None}]), "0.user.text"),
        (document(messages=[{"kind": "user", "text": "x", "extra": 1}]), "0.user.extra"),
        (document(messages=[{"kind": "user"}]), "0.user.text: Field required"),
        (document(messages=[{"kind": "alien", "text": "x"}]), "does not match any of the"),
        (document(messages=[{**result(), "is_error": "yes"}]), "is_error"),
        (document(messages=[result()]), "answers no open call"),
        (document(messages=[assistant("a"), result("b")]), "expected the result of 'a'"),
        (document(messages=[assistant("a"), result("a"), assistant("a")]), "duplicate"),
        (
            document(messages=[{"kind": "summary", "text": "s", "start": 1, "end": 0}]),
            "must stand right after the span",
        ),
        (
            document(messages=[{"kind": "summary", "text": "s", "start": 0, "end": 1.0}]),
            "0.summary.end",
        ),
        (document(meta={"model": 3}), "meta"),
        (document(messages="[" * 100_000), "not valid"),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_load_refuses_bad_input_with_one_clear_error(text: str | bytes, problem: str) -> None:
    with pytest.raises(TranscriptError) as info:
        Transcript.load(text)
    assert problem in str(info.value)
    assert isinstance(info.value, WarmloopError)


def test_pairing_errors_are_warmloop_errors() -> None:
    assert issubclass(PairingError, TranscriptError)


def test_version_1_files_still_load() -> None:
    old = {
        "format": "warmloop.transcript/1",
        "id": "t_old",
        "version": 2,
        "messages": [{"kind": "system", "text": "s"}, {"kind": "user", "text": "u"}],
    }
    loaded = Transcript.load(json.dumps(old))
    assert (loaded.id, loaded.conversation, loaded.revision) == ("t_old", "t_old", 2)
    assert loaded.messages == (SystemText("s"), UserText("u"))


def test_text_that_cannot_be_encoded_is_made_encodable_where_it_enters() -> None:
    call = ToolCall("c\ud800", "t", '{"p": "\udcff"}')
    transcript = Transcript([SystemText("s"), UserText("name report-\udcff.txt")])
    transcript.append(AssistantTurn(tool_calls=(call,), provider_details={"x": ["\ud800"]}))
    transcript.append(ToolResult("c\ufffd", "t", "out \ud800"))
    text = transcript.dump()
    text.encode("utf-8")  # no lone surrogate is left anywhere
    assert transcript[1] == UserText("name report-\ufffd.txt")
    assert "\ufffd" in transcript[2].tool_calls[0].arguments  # type: ignore[union-attr]
    assert Transcript.load(text) == transcript


def test_unchanged_messages_keep_their_identity_when_appended() -> None:
    message = UserText("plain")
    transcript = Transcript()
    transcript.append(message)
    assert transcript[0] is message


def test_one_message_round_trips_through_its_json_text() -> None:
    message = AssistantTurn(text="t", tool_calls=(ToolCall("c", "n", "{}"),))
    assert message_from_json(dumps_message(message)) == message
    with pytest.raises(TranscriptError, match="not a valid transcript message"):
        message_from_json('{"kind": "user", "text": 1}')
