"""Transcript values, JSON round-trip and the pairing check (I3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.scenario import TOOLS
from warmloop import Agent, ScriptedModel, call
from warmloop.errors import PairingError, TranscriptError
from warmloop.messages import (
    AssistantTurn,
    Meta,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.providers.openai.chat_format import ChatRenderer
from warmloop.transcript import Transcript, check_pairing, unique_call_ids


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


def ids_of(turn: AssistantTurn) -> list[str]:
    return [c.id for c in turn.tool_calls]


@pytest.mark.parametrize(
    ("taken", "given", "renamed"),
    [
        ((), ("a", "b"), ["a", "b"]),
        (("call_0",), ("call_0",), ["call_0-2"]),
        (("call_0", "call_0-2"), ("call_0",), ["call_0-3"]),
        ((), ("x", "x", "x"), ["x", "x-2", "x-3"]),
        (("x",), ("x", "x-2"), ["x-2", "x-2-2"]),
        (("x-3",), ("x", "x", "x"), ["x", "x-2", "x-4"]),
    ],
    ids=["unique", "earlier", "earlier-twice", "within", "suffix-taken", "skips-a-taken-name"],
)
def test_a_repeated_call_id_gets_the_first_free_suffix(
    taken: tuple[str, ...], given: tuple[str, ...], renamed: list[str]
) -> None:
    assert ids_of(unique_call_ids(turn(*given), taken)) == renamed


def test_a_turn_whose_ids_are_free_comes_back_as_it_was() -> None:
    original = turn("a", "b")
    assert unique_call_ids(original, {"c"}) is original


def test_renaming_keeps_everything_but_the_ids() -> None:
    details = {"chat": {"tool_calls": [{"id": "a"}]}}
    calls = (ToolCall("a", "lookup", '{"key": 1}'),)
    original = AssistantTurn("t", "r", calls, provider_details=details)
    renamed = unique_call_ids(original, {"a"})
    assert renamed.tool_calls == (ToolCall("a-2", "lookup", '{"key": 1}'),)
    assert (renamed.text, renamed.reasoning, renamed.provider_details) == ("t", "r", details)


def test_a_transcript_renames_against_every_call_it_holds_and_its_forks_too() -> None:
    transcript = Transcript([UserText("q"), turn("call_0"), result("call_0")])
    second = transcript.unique_calls(turn("call_0"))
    assert ids_of(second) == ["call_0-2"]
    transcript.extend([second, result("call_0-2")])
    fork = transcript.fork()
    assert ids_of(fork.unique_calls(turn("call_0", "call_0-2"))) == ["call_0-3", "call_0-2-2"]
    loaded = Transcript.load(transcript.dump())
    assert ids_of(loaded.unique_calls(turn("call_0"))) == ["call_0-3"]


@given(
    st.lists(st.sampled_from(["a", "a-2", "b", "call_0"]), max_size=4),
    st.lists(st.sampled_from(["a", "a-2", "a-3", "b", "call_0"]), max_size=6),
)
def test_renamed_ids_are_unique_new_and_the_same_every_time(
    taken: list[str], given: list[str]
) -> None:
    renamed = ids_of(unique_call_ids(turn(*given), taken))
    assert len(set(renamed)) == len(renamed) == len(given)
    assert not set(renamed) & set(taken)
    assert all(
        new == old or new.startswith(f"{old}-") for new, old in zip(renamed, given, strict=True)
    )
    assert renamed == ids_of(unique_call_ids(turn(*given), list(reversed(taken))))
    known = sorted(set(taken))
    check_pairing([turn(*known), *map(result, known), turn(*renamed)])


def test_a_fork_keeps_the_revision_of_the_transcript_it_continues() -> None:
    # A follow-up's first request is checked against the parent's last: with the revision
    # reset it would be excused as a maintenance point, and a real bust would go unseen.
    call_ = ToolCall("c1", "read", "{}")
    parent = Transcript(
        [
            SystemText("s"),
            UserText("u"),
            AssistantTurn(tool_calls=(call_,)),
            ToolResult("c1", "read", "x" * 50),
        ]
    )
    parent.replace_content({3: "pruned"})
    assert parent.revision == 1
    child = parent.fork()
    assert (child.revision, child.meta.parent) == (1, parent.id)


# Round three (issue 38): a fold may reach the end of a finished step, not into an open one.


def test_a_fold_may_end_at_the_end_of_a_finished_step_but_not_inside_an_open_one() -> None:
    def step(n: int) -> list[AssistantTurn | ToolResult]:
        call_id = f"call_{n}_0"
        return [
            AssistantTurn(tool_calls=(ToolCall(call_id, "read", "{}"),)),
            ToolResult(call_id, "read", f"result {n}"),
        ]

    finished = Transcript([SystemText("s"), UserText("task"), *step(1), *step(2)])
    rewrite = finished.fold(1, len(finished), "read twice")
    assert rewrite.folded == (1, 6)
    check_pairing(finished.messages)
    open_step = Transcript([SystemText("s"), UserText("task"), *step(1), step(2)[0]])
    with pytest.raises(TranscriptError, match="no results"):
        open_step.fold(1, len(open_step), "cut")
