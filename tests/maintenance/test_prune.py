"""Prune: deterministic placeholders for old, large tool results; properties over random
transcripts (idempotent, the tail and every assistant turn untouched, pairing kept, nothing
lost between the live transcript and the archive)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from warmloop.maintenance.fold import fold_span
from warmloop.maintenance.prune import (
    PLACEHOLDER_MARK,
    PrunePolicy,
    placeholder,
    plan_prune,
    tail_start,
    unread,
)
from warmloop.messages import AssistantTurn, SystemText, ToolCall, ToolResult, UserText
from warmloop.transcript import Transcript, check_pairing


def tokens(text: str) -> int:
    return len(text)  # one character, one token: easy to reason about


def session(sizes: list[list[tuple[int, bool, str]]]) -> Transcript:
    """A transcript with one step per entry of `sizes`: each (size, is_error, tool) a call."""
    transcript = Transcript([SystemText("sys"), UserText("task")])
    for k, step in enumerate(sizes):
        calls = tuple(
            ToolCall(f"call_{k}_{i}", tool, json.dumps({"path": f"f{k}_{i}.py"}))
            for i, (_, _, tool) in enumerate(step)
        )
        transcript.append(AssistantTurn(text=f"step {k}", tool_calls=calls))
        for call, (size, error, _) in zip(calls, step, strict=True):
            transcript.append(ToolResult(call.id, call.name, "x" * size, is_error=error))
    return transcript


POLICY = PrunePolicy(
    tail_tokens=300, tail_messages=3, min_tokens=50, exclude_tools=frozenset({"keep"})
)
steps = st.lists(
    st.lists(
        st.tuples(st.integers(0, 400), st.booleans(), st.sampled_from(["read", "search", "keep"])),
        max_size=3,
    ),
    max_size=12,
)


@settings(max_examples=80, deadline=None)
@given(steps)
def test_prune_properties_over_random_sessions(sizes: list[list[tuple[int, bool, str]]]) -> None:
    transcript = session(sizes)
    before = transcript.messages
    plan = plan_prune(transcript, POLICY, tokens)
    rewrite = transcript.replace_content(plan.edits)
    after = transcript.messages
    # message count unchanged; pairing holds
    assert len(after) == len(before)
    check_pairing(after)
    newest = max((i for i, m in enumerate(before) if isinstance(m, AssistantTurn)), default=-1)
    assert all(index < newest for index in plan.edits)  # nothing the model has not read
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        if index >= plan.tail_start or not isinstance(old, ToolResult):
            assert new is old  # the tail, assistant turns, calls and ids: untouched
        else:
            assert isinstance(new, ToolResult)
            assert (new.call_id, new.name, new.is_error) == (old.call_id, old.name, old.is_error)
        if new != old:
            assert isinstance(old, ToolResult)
            assert not old.is_error
            assert old.name != "keep"
            assert len(old.content) >= POLICY.min_tokens
    # idempotent: a second pass plans nothing and keeps the revision
    again = plan_prune(transcript, POLICY, tokens)
    assert not again
    assert transcript.replace_content(again.edits).revision == rewrite.revision
    # live + archive = everything ever written
    restored = list(after)
    for index, original in rewrite.replaced:
        restored[index] = original
    assert restored == list(before)
    # a fold up to the tail ends at the start of the tail's step: every call keeps its result
    span = fold_span(transcript, plan.tail_start)
    if span is not None:
        assert span[1] <= plan.tail_start
        transcript.fold(*span, "summary")
        check_pairing([m for _, m in transcript.visible()])


def test_a_fold_up_to_one_of_a_steps_results_ends_where_the_step_begins() -> None:
    transcript = session([[(100, False, "read")], [(100, False, "read")] * 8, [(9, False, "read")]])
    assert isinstance(transcript[8], ToolResult)  # one of the wide step's results
    assert fold_span(transcript, 8) == (2, 4)  # its assistant turn is message 4
    transcript.fold(2, 4, "summary of the first step")
    check_pairing([m for _, m in transcript.visible()])
    assert fold_span(transcript, 3) is None  # nothing before the first step to cover


def test_the_tail_never_starts_on_a_tool_result() -> None:
    transcript = session([[(10, False, "read"), (10, False, "read")], [(10, False, "read")]])
    visible = list(transcript.visible())
    for budget in range(0, 80):
        start = tail_start(visible, PrunePolicy(tail_tokens=budget, tail_messages=1), tokens)
        assert start == len(visible) or not isinstance(visible[start][1], ToolResult)


def test_what_the_model_has_not_read_is_never_pruned() -> None:
    # The newest step's results follow the newest assistant turn: no request the model
    # answered held them, so no tail however small reaches into them.
    transcript = session([[(100, False, "read")], [(100, False, "read")] * 5])
    visible = list(transcript.visible())
    assert unread(visible) == 5
    for budget in range(0, 800, 7):
        for messages in range(0, 9):
            policy = PrunePolicy(tail_tokens=budget, tail_messages=messages, min_tokens=50)
            assert tail_start(visible, policy, tokens) <= 5
            assert set(plan_prune(transcript, policy, tokens).edits) <= {3}
    assert unread(list(Transcript([SystemText("sys"), UserText("task")]).visible())) == 0


def test_the_placeholder_says_the_size_and_how_to_get_it_back_without_repeating_the_call() -> None:
    text = placeholder(ToolResult("c1", "read_file", "y" * 12345))
    assert text == f"{PLACEHOLDER_MARK}12,345 characters; call the tool again to see them]"
    assert "read_file" not in text  # the call it answers stands beside it


def test_errors_excluded_tools_small_results_and_the_tail_are_kept() -> None:
    transcript = session(
        [
            [(500, True, "read")],  # an error
            [(500, False, "keep")],  # excluded
            [(10, False, "read")],  # small
            [(500, False, "read")],  # pruned
            [(500, False, "read")],  # in the tail
        ]
    )
    plan = plan_prune(
        transcript,
        PrunePolicy(
            tail_tokens=400, tail_messages=2, min_tokens=50, exclude_tools=frozenset({"keep"})
        ),
        tokens,
    )
    assert list(plan.edits) == [9]
    assert plan.first == 9
    assert plan.tail_start == 10
    assert plan.dropped_tokens == 500 - len(plan.edits[9])


def test_nothing_hidden_by_a_fold_is_planned() -> None:
    transcript = session([[(500, False, "read")], [(500, False, "read")], [(5, False, "read")]])
    transcript.fold(2, 4, "summary of the first step")
    plan = plan_prune(
        transcript, PrunePolicy(tail_tokens=10, tail_messages=2, min_tokens=50), tokens
    )
    assert list(plan.edits) == [6]  # the second step's result; the first is folded away
