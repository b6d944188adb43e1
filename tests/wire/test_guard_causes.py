"""The guard names each way a prefix moves: every cause the audit reports, from the wire
streams of two requests (Chat, Anthropic and Responses shapes)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop.providers.anthropic.record import LAYOUT as ANTHROPIC
from warmloop.providers.gemini.record import HTTP_LAYOUT as GEMINI_HTTP
from warmloop.providers.gemini.record import SDK_LAYOUT as GEMINI_SDK
from warmloop.providers.openai.record import CHAT, RESPONSES
from warmloop.wire.causes import classify, volatile_value
from warmloop.wire.guard import Bust, compare
from warmloop.wire.stream import WireLayout, canonical_stream

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
]
LOG = "\n".join(f"line {n}: value = {n * 7}" for n in range(60))


def chat(system: str = "You are careful.", turns: int = 3, **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "Find the bug."},
    ]
    for k in range(turns):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "read_file"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"{k}\n{LOG}"})
    return {"model": "gpt-5", "tools": copy.deepcopy(TOOLS), "messages": messages, **extra}


def bust(before: dict[str, Any], after: dict[str, Any], layout: WireLayout = CHAT) -> Bust:
    found = compare(canonical_stream(before, layout), canonical_stream(after, layout)).bust
    assert found is not None
    return found


def test_appending_turns_is_no_bust() -> None:
    check = compare(canonical_stream(chat(turns=2), CHAT), canonical_stream(chat(turns=3), CHAT))
    assert check.bust is None


def test_a_timestamp_in_the_system_prompt_is_named_with_both_values() -> None:
    found = bust(chat("Now: 2026-05-01T10:00:01Z", 2), chat("Now: 2026-05-01T10:00:07Z", 3))
    assert (found.section, found.kind) == ("system", "volatile-value")
    assert "a timestamp in the prompt" in found.cause
    assert "'2026-05-01T10:00:01Z' -> '2026-05-01T10:00:07Z'" in found.cause


def test_a_uuid_a_path_and_a_counter_are_told_apart() -> None:
    cases = {
        "Run 0b7c6f8e-1d2a-4c3b-9e8f-7a6b5c4d3e2f here.": "a uuid",
        "Run 5f3a9c0e-0000-4000-8000-000000000000 here.": "a uuid",
        "cwd=/home/alice/proj-a/src today.": "a path",
        "Step 3 of the plan.": "a counter",
    }
    replacements = {
        "0b7c6f8e-1d2a-4c3b-9e8f-7a6b5c4d3e2f": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
        "5f3a9c0e-0000-4000-8000-000000000000": "5f3a9c0f-0000-4000-8000-000000000000",
        "/home/alice/proj-a/src": "/home/alice/proj-b/src",
        "Step 3": "Step 4",
    }
    for system, expected in cases.items():
        changed = system
        for old, new in replacements.items():
            changed = changed.replace(old, new)
        found = bust(chat(system, 1), chat(changed, 2))
        assert expected in found.cause, (system, found.cause)
        assert found.kind == "volatile-value"


def test_tools_reordered_added_and_changed_are_three_causes() -> None:
    reordered = chat(turns=3)
    reordered["tools"].reverse()
    assert bust(chat(turns=2), reordered).cause == "tools reordered (same tools, another order)"
    added = chat(turns=3)
    added["tools"].append({"type": "function", "function": {"name": "write_file"}})
    found = bust(chat(turns=2), added)
    assert (found.kind, found.cause) == (
        "tools-changed",
        "tools added or removed (added write_file)",
    )
    edited = chat(turns=3)
    edited["tools"][1]["function"]["description"] = "Search the repo."
    found = bust(chat(turns=2), edited)
    assert found.kind == "tool-schema"


def test_the_model_and_other_parameters_are_named() -> None:
    found = bust(chat(turns=2), {**chat(turns=3), "model": "gpt-5-mini"})
    assert (found.kind, found.cause) == ("model", "the model changed ('gpt-5' -> 'gpt-5-mini')")
    found = bust(chat(turns=2), chat(turns=3, tool_choice="required"))
    assert (found.kind, found.cause) == ("parameters", "request parameters changed: tool_choice")


def test_a_tool_result_swapped_for_a_placeholder_is_pruning() -> None:
    pruned = chat(turns=3)
    pruned["messages"][3]["content"] = "[tool result cleared]"
    found = bust(chat(turns=2), pruned)
    assert (found.section, found.kind) == ("message 3", "content-replaced")


def test_a_cut_tool_result_is_truncation() -> None:
    cut = chat(turns=3)
    cut["messages"][3]["content"] = cut["messages"][3]["content"][:300] + "... [truncated]"
    found = bust(chat(turns=2), cut)
    assert (found.section, found.kind) == ("message 3", "content-truncated")


def test_dropping_the_oldest_turns_is_messages_removed() -> None:
    window = chat(turns=3)
    del window["messages"][2:4]
    found = bust(chat(turns=3), window)
    assert (found.section, found.kind) == ("message 2", "messages-removed")
    assert found.cause.startswith("2 message(s) removed at message 2")
    one = chat(turns=3)
    del one["messages"][2]
    assert bust(chat(turns=3), one).cause.startswith("1 message(s) removed at message 2")


def test_a_summary_in_place_of_old_turns_is_compaction() -> None:
    summarised = chat(turns=3)
    summary = {"role": "user", "content": "Summary of the work so far: read two files."}
    summarised["messages"][2:6] = [summary]
    found = bust(chat(turns=3), summarised)
    assert (found.section, found.kind) == ("message 2", "messages-summarised")


def test_a_summary_that_keeps_no_old_turn_is_named_by_its_words() -> None:
    summarised = chat(turns=0)
    summarised["messages"].append({"role": "user", "content": "Summary so far: read two files."})
    found = bust(chat(turns=3), summarised)
    assert (found.section, found.kind) == ("message 2", "messages-summarised")


def test_dropped_responses_reasoning_items_are_named() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    user = {"role": "user", "content": "go"}
    before = {"model": "gpt-5", "input": [user, reasoning, call, output]}
    after = {"model": "gpt-5", "input": [user, call, output, reasoning, call, output]}
    found = bust(before, after, RESPONSES)
    assert (found.section, found.kind) == ("message 1", "reasoning-dropped")
    assert "encrypted_content" in found.cause


def test_a_stripped_anthropic_signature_is_reasoning_dropped() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "EqQB"}
    use = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    turn = {"role": "assistant", "content": [thinking, use]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    before: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    after = copy.deepcopy(before)
    before["messages"] += [turn, result]
    after["messages"] += [{"role": "assistant", "content": [use]}, result]
    found = bust(before, after, ANTHROPIC)
    assert found.kind == "reasoning-dropped"


def test_an_unclassified_edit_keeps_the_generic_cause() -> None:
    edited = chat(turns=3)
    edited["messages"][1]["content"] = "Find the bug, please."
    found = bust(chat(turns=2), edited)
    assert found.kind == "history-rewritten"
    assert "replaced or re-rendered" in found.cause


@given(st.text(max_size=30), st.text(max_size=30), st.integers(0, 40))
def test_volatile_value_never_names_equal_tokens(old: str, new: str, offset: int) -> None:
    found = volatile_value(old, new, offset)
    if found is not None:
        kind, was, now = found
        assert was != now
        assert kind in {"uuid", "timestamp", "path", "counter", "id"}


@given(
    st.text(max_size=40), st.text(max_size=40), st.sampled_from(["tools", "system", "message 2"])
)
def test_classify_always_answers_with_a_known_kind(old: str, new: str, section: str) -> None:
    kinds = {
        "key-order",
        "tools-changed",
        "tool-schema",
        "parameters",
        "model",
        "volatile-value",
        "system-changed",
        "reasoning-dropped",
        "messages-removed",
        "messages-summarised",
        "messages-inserted",
        "message-rebuilt",
        "content-replaced",
        "content-truncated",
        "history-rewritten",
    }
    cause = classify(
        section, old, new, old[:8], new[:8], offset=0, old_items=[old], new_items=[new]
    )
    assert cause.kind in kinds
    assert cause.text


def _gemini(layout: WireLayout, description: str, added: bool = False) -> dict[str, Any]:
    """A Gemini request in the REST spelling (`functionDeclarations`, the audit's view) or
    the SDK's (`function_declarations` under `config`, the run-time guard's view)."""
    key = "functionDeclarations" if layout is GEMINI_HTTP else "function_declarations"
    declarations = [
        {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}},
        {"name": "search", "description": description, "parameters": {"type": "object"}},
    ]
    if added:
        declarations.append({"name": "write_file", "parameters": {"type": "object"}})
    tools = [{key: declarations}]
    contents = [{"role": "user", "parts": [{"text": "Find the bug."}]}]
    if layout is GEMINI_HTTP:
        return {"contents": contents, "tools": tools}
    return {"model": "gemini-2.5-flash", "contents": contents, "config": {"tools": tools}}


@pytest.mark.parametrize("layout", [GEMINI_HTTP, GEMINI_SDK], ids=["rest", "sdk"])
def test_a_gemini_tool_change_names_the_tool_not_null(layout: WireLayout) -> None:
    """Gemini holds every function in one tool entry: the cause names the declaration that
    changed, or the one added, never 'null' or the whole list."""
    found = bust(_gemini(layout, "Search."), _gemini(layout, "Search the repo."), layout)
    assert (found.kind, found.cause) == (
        "tool-schema",
        "a tool's definition changed ('search': description or schema)",
    )
    found = bust(_gemini(layout, "Search."), _gemini(layout, "Search.", added=True), layout)
    assert (found.kind, found.cause) == (
        "tools-changed",
        "tools added or removed (added write_file)",
    )


def test_an_anthropic_container_change_is_not_a_bust() -> None:
    """A new code-execution `container` leaves the cache as it was; `tool_choice` does not."""

    def request(**extra: Any) -> dict[str, Any]:
        messages = [{"role": "user", "content": "Run the tests."}]
        return {"model": "claude-sonnet-4-6", "messages": messages, **extra}

    before, after = request(container="container_1"), request(container="container_2")
    stream = canonical_stream
    assert compare(stream(before, ANTHROPIC), stream(after, ANTHROPIC)).bust is None
    found = bust(
        request(tool_choice={"type": "auto"}), request(tool_choice={"type": "any"}), ANTHROPIC
    )
    assert found.kind == "parameters"
