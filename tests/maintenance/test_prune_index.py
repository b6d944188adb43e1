"""The maintainer's step-by-step sizes (issue 36, per-step overhead): the prune plan a
`PruneIndex` keeps as a transcript grows equals `plan_prune` over the whole transcript, and
the sizer's estimate from wire streams equals the one from their joined text, on random
sessions with joined turns, rewrites, prunes, folds and a ratio that moves every step."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from warmloop.maintenance.fold import fold_span
from warmloop.maintenance.length_sums import LengthSums
from warmloop.maintenance.prune import PLACEHOLDER_MARK, PrunePolicy, plan_prune, text_of
from warmloop.maintenance.prune_index import PruneIndex
from warmloop.maintenance.size import PromptSizer, TokenCounter
from warmloop.messages import AssistantTurn, SystemText, ToolCall, ToolResult, UserText
from warmloop.providers.scripted import ScriptedModel
from warmloop.transcript import Transcript, scratch_copy

POLICY = PrunePolicy(
    tail_tokens=120, tail_messages=3, min_tokens=20, exclude_tools=frozenset({"keep"})
)
result = st.tuples(
    st.integers(0, 300), st.booleans(), st.sampled_from(["read", "search", "keep", "mark"])
)
operation = st.one_of(
    st.tuples(st.just("step"), st.lists(result, max_size=3), st.text(max_size=30)),
    st.tuples(st.just("steps"), st.integers(1, 12), st.integers(0, 300)),
    st.tuples(st.just("user"), st.text(max_size=40)),
    st.tuples(st.sampled_from(["prune", "fold", "copy"])),
)


def append_step(transcript: Transcript, k: int, results: list[tuple[int, bool, str]]) -> None:
    calls = tuple(
        ToolCall(f"call_{k}_{i}", tool, json.dumps({"path": f"f{k}_{i}.py"}))
        for i, (_, _, tool) in enumerate(results)
    )
    transcript.append(AssistantTurn(text=f"step {k}", tool_calls=calls))
    for call, (size, error, tool) in zip(calls, results, strict=True):
        content = (PLACEHOLDER_MARK if tool == "mark" else "") + "x" * size
        transcript.append(ToolResult(call.id, call.name, content, is_error=error))


class Ratio:
    """The maintainer's estimate at one characters-per-token ratio."""

    def __init__(self, chars_per_token: float) -> None:
        self.chars_per_token = chars_per_token

    def __call__(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def of_text(self, text: str) -> int:
        return self(len(text))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(operation, st.floats(0.5, 40.0)), max_size=25))
def test_the_kept_plan_equals_the_whole_plan_at_every_step(
    operations: list[tuple[tuple[object, ...], float]],
) -> None:
    transcript = Transcript([SystemText("sys"), UserText("task")])
    indices = PruneIndex(), PruneIndex(block=1), PruneIndex(block=3)
    for k, (op, ratio) in enumerate(operations):
        tokens = Ratio(ratio)  # moves each step, as the calibration does
        if op[0] == "step":
            append_step(transcript, k, op[1])  # type: ignore[arg-type]
        elif op[0] == "steps":  # a run of equal steps: whole blocks of one size
            for j in range(int(op[1])):  # type: ignore[call-overload]
                append_step(transcript, 100 * k + j, [(int(op[2]), False, "read")])  # type: ignore[call-overload]
        elif op[0] == "user":
            transcript.append(UserText(str(op[1])))
        elif op[0] == "prune":
            transcript.replace_content(plan_prune(transcript, POLICY, tokens.of_text).edits)
        elif op[0] == "fold":
            span = fold_span(transcript, plan_prune(transcript, POLICY, len).tail_start)
            if span is not None:
                transcript.fold(*span, f"summary {k}")
        else:
            transcript = scratch_copy(transcript)
        whole = plan_prune(transcript, POLICY, tokens.of_text)
        for index in indices:
            assert index.plan(transcript, POLICY, tokens) == whole
        if whole.first is not None:
            after = tokens(sum(len(text_of(m)) for _, m in transcript.visible(whole.first)))
            assert indices[0].tokens_from(transcript, whole.first, tokens) == after


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["step", "user", "prune"]), st.integers(1, 5000))))
def test_the_estimate_from_wire_streams_equals_the_one_from_their_text(
    operations: list[tuple[str, int]],
) -> None:
    model = ScriptedModel(name="sizer")
    transcript = Transcript([SystemText("sys"), UserText("task")])
    by_wire, by_text = PromptSizer(TokenCounter("sizer")), PromptSizer(TokenCounter("sizer"))
    for k, (op, tokens) in enumerate(operations):
        if op == "step":
            append_step(transcript, k, [(tokens % 300, False, "read")])
        elif op == "user":
            transcript.append(UserText(f"more {k}"))
        else:
            edits = plan_prune(transcript, POLICY, len).edits
            transcript.replace_content(edits)
        rendered = model.render(transcript, ())
        assert by_wire.estimate(rendered.wire) == by_text.estimate(rendered.stream)
        by_wire.observed(rendered.wire, tokens)
        by_text.observed(rendered.stream, tokens)


def test_a_longest_result_exactly_at_the_minimum_is_planned() -> None:
    transcript = Transcript([SystemText("sys"), UserText("task")])
    append_step(transcript, 0, [(POLICY.min_tokens, False, "read")])
    for k in range(1, 4):
        append_step(transcript, k, [(POLICY.min_tokens - 1, False, "read")])
    transcript.append(UserText("y" * 200))  # the tail
    kept = PruneIndex().plan(transcript, POLICY, lambda chars: chars)
    assert list(kept.edits) == [3]
    assert kept == plan_prune(transcript, POLICY, len)


def test_the_tail_taken_a_block_at_a_time_stops_where_one_at_a_time_does() -> None:
    transcript = Transcript([SystemText("sys"), UserText("task")])
    for k in range(12):
        transcript.append(UserText(f"equal {k:03d}"))  # one block of equal sizes after another
    append_step(transcript, 99, [(9, False, "read"), (9, False, "read")])
    for block in (2, 3, 5):
        index = PruneIndex(block=block)
        for budget in range(0, 200, 3):
            for messages in range(16):  # 0 with budget 0: a tail of only what is unread
                policy = PrunePolicy(tail_tokens=budget, tail_messages=messages)
                kept = index.plan(transcript, policy, lambda chars: chars)
                assert kept == plan_prune(transcript, policy, len), (block, budget, messages)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 400), st.booleans())))
def test_sums_by_length_equal_the_sums_of_a_list(
    operations: list[tuple[int, int, bool]],
) -> None:
    sums, kept = LengthSums(), list[tuple[int, int]]()
    for length, other, remove in operations:
        if remove and kept:
            gone = kept.pop(length % len(kept))
            sums.add(gone[0], gone[0], gone[1], -1)
        else:
            kept.append((length, other))
            sums.add(length, length, other)
        for least in (0, 1, length, length + 1, 2 * length, 10_000):
            longer = [entry for entry in kept if entry[0] >= least]
            expected = sum(e[0] for e in longer), sum(e[1] for e in longer)
            assert sums.at_least(least) == expected


def test_a_policy_excluding_other_tools_plans_as_the_whole_plan_does() -> None:
    transcript = Transcript([SystemText("sys"), UserText("task")])
    for k in range(6):
        append_step(transcript, k, [(90, False, "read"), (80, False, "keep")])
    transcript.append(UserText("y" * 200))  # the tail
    index = PruneIndex()
    for excluded in ({"keep"}, set(), {"read"}, {"keep"}):
        policy = PrunePolicy(tail_tokens=120, min_tokens=20, exclude_tools=frozenset(excluded))
        whole = plan_prune(transcript, policy, len)
        assert whole
        assert index.plan(transcript, policy, lambda chars: chars) == whole
