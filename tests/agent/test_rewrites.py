"""Forks and rewrites: a new branch gets a new id; the only changes to existing content are
explicit rewrites that bump the revision and return what they replaced; a fold's summary
replaces its span on every wire format; no renderer serves one branch's bytes to another."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

from warmloop import TranscriptError
from warmloop.messages import (
    AssistantTurn,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.protocols import react_text
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.gemini.format import GeminiRenderer
from warmloop.providers.local.chat_template import render_gemma
from warmloop.providers.openai.chat_format import ChatRenderer
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript, check_pairing

SUMMARY = "<conversation-summary>looked up a and b</conversation-summary>"


def step(k: int, content: str) -> list[Any]:
    call = ToolCall(f"call_{k}_0", "lookup", f'{{"key":"{k}"}}')
    return [AssistantTurn(tool_calls=(call,)), ToolResult(call.id, "lookup", content)]


def session() -> Transcript:
    """system, task, three steps (indices 2..7), a follow-up question."""
    return Transcript(
        [
            SystemText("sys"),
            UserText("task"),
            *step(1, "SECRET-A"),
            *step(2, "SECRET-B"),
            *step(3, "value c"),
            UserText("and now?"),
        ]
    )


def test_fork_mints_a_new_id_and_shares_only_the_past() -> None:
    parent = session()
    child = parent.fork()
    child.append(AssistantTurn(text="child only"))
    assert child.id != parent.id
    assert child.conversation == parent.conversation  # one routing key for the lineage
    assert child.meta.parent == parent.id
    assert len(parent) == 9
    assert child.messages[:9] == parent.messages
    assert child.key != parent.key


def test_a_transcript_refuses_unsafe_ids() -> None:
    with pytest.raises(Exception, match="not allowed"):
        Transcript(id="../x")


def test_replace_content_bumps_the_revision_and_returns_the_originals() -> None:
    transcript = session()
    rewrite = transcript.replace_content({3: "[pruned]", 5: "[pruned]"})
    assert rewrite.revision == transcript.revision == 1
    assert [(i, m.content) for i, m in rewrite.replaced] == [(3, "SECRET-A"), (5, "SECRET-B")]  # type: ignore[union-attr]
    assert transcript[3] == ToolResult("call_1_0", "lookup", "[pruned]")
    again = transcript.replace_content({3: "[pruned]"})
    assert again.replaced == ()
    assert transcript.revision == 1  # a no-op keeps the revision


@pytest.mark.parametrize(
    ("index", "problem"),
    [(0, "system message"), (2, "assistant message"), (99, "no message 99")],
)
def test_replace_content_never_touches_assistant_turns_or_system_text(
    index: int, problem: str
) -> None:
    transcript = session()
    with pytest.raises(TranscriptError, match=problem):
        transcript.replace_content({index: "x"})
    assert transcript.revision == 0


def test_fold_hides_its_span_behind_a_summary_and_keeps_every_message() -> None:
    transcript = session()
    rewrite = transcript.fold(2, 6, "looked up a and b")
    assert rewrite.folded == (2, 6)
    assert transcript.revision == 1
    assert len(transcript) == 10  # nothing removed; the summary is inserted
    assert transcript[6] == Summary("looked up a and b", 2, 6)
    visible = transcript.visible_messages()
    assert [m.kind for m in visible] == [
        "system", "user", "summary", "assistant", "tool_result", "user",
    ]  # fmt: skip
    check_pairing(visible)
    assert Transcript.load(transcript.dump()).visible_messages() == visible


def test_a_later_fold_may_cover_an_earlier_one_whole_but_never_in_part() -> None:
    transcript = session()
    transcript.fold(2, 6, "first")  # its summary stands at 6
    with pytest.raises(TranscriptError, match="cuts through the earlier fold"):
        transcript.fold(4, 9, "partial")
    with pytest.raises(TranscriptError, match="its summary stands at message 6"):
        transcript.fold(2, 6, "again")  # hides the same messages, not the first summary
    transcript.fold(2, 9, "both")  # covers [2, 6), its summary and the third step
    assert [m.kind for m in transcript.visible_messages()] == [
        "system", "user", "summary", "user",
    ]  # fmt: skip
    assert transcript.visible_messages()[2] == Summary("both", 2, 9)


def test_a_fold_before_an_earlier_one_shifts_that_one() -> None:
    transcript = session()
    transcript.fold(6, 8, "third step")
    transcript.fold(2, 4, "first step")
    summaries = [m for m in transcript if isinstance(m, Summary)]
    assert summaries == [Summary("first step", 2, 4), Summary("third step", 7, 9)]
    assert Transcript.load(transcript.dump()) == transcript


@pytest.mark.parametrize(
    ("start", "end", "problem"),
    [
        (3, 6, "starts on a tool result"),
        (2, 3, "ends before a tool result"),
        (0, 4, "must lie within"),
        (4, 4, "must lie within"),
    ],
)
def test_a_fold_never_splits_a_call_from_its_result(start: int, end: int, problem: str) -> None:
    transcript = session()
    with pytest.raises(TranscriptError, match=problem):
        transcript.fold(start, end, "x")
    assert transcript.revision == 0


def test_a_fold_cannot_cover_a_step_still_in_progress() -> None:
    transcript = session()
    transcript.append(AssistantTurn(tool_calls=(ToolCall("call_9_0", "lookup", "{}"),)))
    with pytest.raises(TranscriptError, match="inside a step"):
        transcript.fold(2, len(transcript), "x")


def test_appending_a_summary_directly_is_refused() -> None:
    with pytest.raises(TranscriptError, match="fold"):
        session().append(Summary("s", 1, 2))


def test_answer_pending_closes_a_step_cut_short() -> None:
    transcript = session()
    calls = (ToolCall("x1", "lookup", "{}"), ToolCall("x2", "lookup", "{}"))
    transcript.extend([AssistantTurn(tool_calls=calls), ToolResult("x1", "lookup", "ok")])
    assert transcript.answer_pending("interrupted") == 1
    assert transcript[-1] == ToolResult("x2", "lookup", "interrupted", is_error=True)
    assert transcript.answer_pending("interrupted") == 0
    check_pairing(transcript.messages)


SPECS: tuple[ToolSpec, ...] = ()
RENDERERS: dict[str, Callable[[], Callable[[Transcript, Any], Any]]] = {
    "chat": lambda: ChatRenderer("m").render,
    "chat-text": lambda: ChatRenderer("m", text_protocol=True).render,
    "anthropic": lambda: (
        AnthropicModel("claude-sonnet-4-6", client=anthropic.AsyncAnthropic(api_key="x")).render
    ),
    "responses": lambda: OpenAIResponsesModel("gpt-5", client=AsyncOpenAI(api_key="x")).render,
    "gemini": lambda: GeminiRenderer("gemini-2.5-flash").render,
    "local": lambda: render_gemma,
}


@pytest.mark.parametrize("wire", sorted(RENDERERS))
def test_a_summary_replaces_its_span_on_every_wire_format(wire: str) -> None:
    render = RENDERERS[wire]()
    transcript = session()
    before = render(transcript, SPECS)  # memoised, then the fold must start it over
    transcript.fold(2, 6, "looked up a and b")
    after = render(transcript, SPECS)
    text = after.stream
    assert "SECRET-A" in before.stream
    assert "SECRET-A" not in text
    assert "SECRET-B" not in text
    assert "value c" in text
    assert text.count(json.dumps(SUMMARY)[1:-1]) == 1  # one wrapper, the same everywhere
    fresh = RENDERERS[wire]()(Transcript.load(transcript.dump()), SPECS)
    assert fresh.stream == text


def test_mid_conversation_system_text_and_notices_render_in_place_as_reminders() -> None:
    transcript = session()
    transcript.extend([SystemText("late rule"), Notice("new tool")])
    turns = react_text.turns(transcript.visible_messages(), SPECS)
    assert turns[-1][0] == "user"
    assert turns[-1][1].endswith(
        "and now?\n\n<system-reminder>late rule</system-reminder>\n\n"
        "<system-reminder>new tool</system-reminder>"
    )


@pytest.mark.parametrize("wire", sorted(RENDERERS))
def test_a_renderer_never_serves_one_branch_the_bytes_of_another(wire: str) -> None:
    render = RENDERERS[wire]()
    root = session()
    left, right = root.fork(), root.fork()
    left.extend([AssistantTurn(text="LEFT"), UserText("left question")])
    right.extend([AssistantTurn(text="RIGHT"), UserText("right question")])
    for _ in range(2):  # interleaved, as two concurrent runs on one model would render
        left_stream = render(left, SPECS).stream
        right_stream = render(right, SPECS).stream
        assert "LEFT" in left_stream
        assert "RIGHT" not in left_stream
        assert "RIGHT" in right_stream
        assert "LEFT" not in right_stream


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=8))
def test_any_folds_a_transcript_accepts_load_back_exactly(attempts: list[tuple[int, int]]) -> None:
    # Whatever sequence of folds `fold` lets through, the transcript it leaves is one the
    # loader accepts (a stored session is loaded through the same checks) and renders with
    # pairing intact; a refused fold changes nothing.
    transcript = Transcript(
        [SystemText("sys"), UserText("task"), *[m for k in range(1, 6) for m in step(k, f"v{k}")]]
    )
    for a, b in attempts:
        before = transcript.dump()
        try:
            transcript.fold(min(a, b), max(a, b) + 1, f"summary {a}-{b}")
        except TranscriptError:
            assert transcript.dump() == before
            continue
        assert Transcript.load(transcript.dump()) == transcript
        check_pairing(transcript.visible_messages())
