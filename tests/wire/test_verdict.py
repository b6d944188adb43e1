"""The provider's own cache verdict, read from the documented shapes, on one scale with the
guard's reading; and which earlier response a request continues.

Shapes: Anthropic "Cache diagnostics"
(https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics, "cache miss reason
types"), OpenAI "Prompt cache diagnostics"
(https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics). Every shape used
here is first validated by the official SDK's own type for it (`anthropic.types.Diagnostics`,
`openai.types.responses.response.PromptCacheDiagnostics`), so a shape the SDKs would not
parse cannot pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Diagnostics
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses.response import PromptCacheDiagnostics
from pydantic import TypeAdapter

from warmloop.facts.usage import Usage
from warmloop.providers.anthropic.readers import read_verdict as anthropic_verdict
from warmloop.providers.anthropic.record import LAYOUT as ANTHROPIC
from warmloop.providers.openai.readers import read_verdict as openai_verdict
from warmloop.wire.comparison import Baselines, extends
from warmloop.wire.guard import Bust, PrefixCheck
from warmloop.wire.request_record import RequestRecord
from warmloop.wire.stream import canonical_stream
from warmloop.wire.verdict import (
    LOST,
    NO_OPINION,
    ProviderVerdict,
    agreement,
    reading,
)

OPENAI = TypeAdapter(PromptCacheDiagnostics)


def anthropic_shape(kind: str, missed: int | None = None) -> dict[str, Any]:
    reason: dict[str, Any] = {"type": kind}
    if missed is not None:
        reason["cache_missed_input_tokens"] = missed
    shape = {"cache_miss_reason": reason}
    Diagnostics.model_validate(shape)  # the SDK takes it
    return shape


def openai_shape(kind: str, **fields: Any) -> dict[str, Any]:
    shape = {"type": kind, **fields}
    OPENAI.validate_python(shape)
    return shape


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("model_changed", "model"),
        ("system_changed", "system"),
        ("tools_changed", "tools"),
        ("messages_changed", "messages"),
    ],
)
def test_anthropic_changes_are_read_with_their_missed_tokens(reason: str, kind: str) -> None:
    verdict = anthropic_verdict(anthropic_shape(reason, 4200), compared_with="msg_01")
    assert verdict == ProviderVerdict("anthropic", reason, kind, 4200, "msg_01")
    assert not verdict.provider_loss
    assert verdict.describe() == f"Anthropic: {reason}, about 4,200 input tokens missed"


def test_previous_message_not_found_is_the_providers_loss() -> None:
    verdict = anthropic_verdict(anthropic_shape("previous_message_not_found"))
    assert verdict is not None
    assert verdict.kind == LOST
    assert verdict.provider_loss
    assert "not the client's doing" in verdict.describe()
    # a lost record says nothing about what the client sent: never a disagreement
    assert agreement(verdict, "messages") is None
    assert agreement(verdict, "unchanged") is None


def test_anthropic_pending_unavailable_and_no_divergence() -> None:
    pending = {"cache_miss_reason": None}
    Diagnostics.model_validate(pending)
    assert anthropic_verdict(pending) == ProviderVerdict("anthropic", "pending", "pending")
    unavailable = anthropic_verdict(anthropic_shape("unavailable"))
    assert unavailable is not None
    assert unavailable.kind == "unavailable"
    # `diagnostics: null` on a request that named a previous message: nothing diverged
    clean = anthropic_verdict({}, compared_with="msg_01")
    assert clean is not None
    assert clean.kind == "unchanged"
    assert agreement(clean, "unchanged") is True
    assert agreement(clean, "system") is False


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("model_changed", "model"),
        ("prompt_cache_key_changed", "routing"),
        ("tools_changed", "tools"),
        ("text_format_changed", "parameters"),
        ("reasoning_effort_changed", "parameters"),
        ("verbosity_changed", "parameters"),
        ("context_compacted", "messages"),
        ("input_changed", "prompt"),
        ("service_tier_changed", "parameters"),
    ],
)
def test_openai_cache_misses_are_read_with_their_reason(reason: str, kind: str) -> None:
    shape = openai_shape(
        "cache_miss", reason=reason, cache_missed_tokens=2048, comparison_reusable_tokens=4096
    )
    verdict = openai_verdict(shape, compared_with="resp_01")
    assert verdict == ProviderVerdict("openai", reason, kind, 2048, "resp_01")


def test_openai_comparison_response_not_found_is_the_providers_loss() -> None:
    verdict = openai_verdict(openai_shape("comparison_response_not_found"))
    assert verdict is not None
    assert verdict.provider_loss
    assert openai_verdict(openai_shape("cache_hit")) == ProviderVerdict(
        "openai", "cache_hit", "unchanged"
    )
    found = openai_verdict(openai_shape("unavailable"))
    assert found is not None
    assert found.kind == "unavailable"


def test_the_guards_reading_agrees_with_the_matching_verdict() -> None:
    assert agreement(anthropic_verdict(anthropic_shape("tools_changed", 1)), reading("tools", "x"))
    assert agreement(
        anthropic_verdict(anthropic_shape("system_changed", 1)), reading("system", "x")
    )
    model = anthropic_verdict(anthropic_shape("model_changed", 1))
    assert agreement(model, reading("request", "model")) is True
    messages = anthropic_verdict(anthropic_shape("messages_changed", 1))
    assert agreement(messages, reading("message 7", "content-replaced")) is True
    assert agreement(messages, reading(None, None, maintenance=True)) is True
    assert agreement(messages, reading("tools", "tools-changed")) is False
    # OpenAI's input_changed covers the instructions and the input alike
    prompt = openai_verdict(
        openai_shape("cache_miss", reason="input_changed", cache_missed_tokens=1)
    )
    assert agreement(prompt, "system") is True
    assert agreement(prompt, "messages") is True
    assert agreement(prompt, "tools") is False


@given(st.integers(0, 500), st.sampled_from(["request", "tools", "system", None]))
def test_a_moved_section_never_agrees_with_no_divergence(index: int, section: str | None) -> None:
    clean = ProviderVerdict("anthropic", "no divergence", "unchanged")
    for where in (f"message {index}", section):
        assert agreement(clean, reading(where, "history-rewritten")) is (where is None)


@given(st.sampled_from(sorted(NO_OPINION)), st.sampled_from(["unchanged", "tools", "messages"]))
def test_no_opinion_is_never_a_disagreement(kind: str, ours: str) -> None:
    assert agreement(ProviderVerdict("anthropic", kind, kind), ours) is None


def test_a_request_record_compares_the_verdict_with_its_prefix_check() -> None:
    bust = Bust(10, "system", "a timestamp", "a", "b", "volatile-value")
    moved = PrefixCheck(10, 100, bust)
    said = anthropic_verdict(anthropic_shape("system_changed", 50))
    assert RequestRecord(Usage(), 0.1, moved, said).agrees is True
    other = anthropic_verdict(anthropic_shape("tools_changed", 50))
    assert RequestRecord(Usage(), 0.1, moved, other).agrees is False
    assert RequestRecord(Usage(), 0.1, PrefixCheck(100, 120)).agrees is None
    # after a rewrite (a maintenance point) the provider sees the messages change, as planned
    rewritten = PrefixCheck(40, 90, maintenance=True)
    changed = anthropic_verdict(anthropic_shape("messages_changed", 50))
    assert RequestRecord(Usage(), 0.1, rewritten, changed).agrees is True


def body(task: str, *turns: str, system: str = "You fix bugs.") -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for k, turn in enumerate(turns):
        messages.append({"role": "assistant", "content": turn})
        messages.append({"role": "user", "content": f"result {k}"})
    return {"model": "claude-sonnet-4-6", "system": system, "messages": messages}


def stream(payload: dict[str, Any]) -> Any:
    return canonical_stream(payload, ANTHROPIC)


def test_baselines_follow_a_key_then_a_conversation_extended() -> None:
    known = Baselines()
    known.remember(stream(body("task A")), "a", "msg_a1")
    known.remember(stream(body("task B")), "b", "msg_b1")
    known.remember(stream(body("task A", "step 1")), "a", "msg_a2")
    assert known.find(stream(body("task A", "step 1", "step 2")), "a") == "msg_a2"
    # a fork under a new key continues the conversation it extends
    assert known.find(stream(body("task B", "other")), "fork") == "msg_b1"
    # a fresh conversation continues nothing: no baseline (only a loose reader guesses)
    assert known.find(stream(body("task C")), "c") is None
    loose = Baselines(loose=True)
    loose.remember(stream(body("task A", system="Other.")), None, "msg_1")
    loose.remember(stream(body("task A", "x")), None, "msg_2")
    assert loose.find(stream(body("task A", "y")), None) == "msg_2"
    # the same request sent twice (a retry by the client): the latest answer is the baseline
    loose.remember(stream(body("task A", "x")), None, "msg_3")
    assert loose.find(stream(body("task A", "y")), None) == "msg_3"


def test_a_rebuilt_message_finds_its_own_conversation_among_others() -> None:
    loose = Baselines(loose=True)
    loose.remember(stream(body("Question: 1. Thought: a")), None, "msg_one")
    loose.remember(stream(body("Question: 2. Thought: a")), None, "msg_two")
    current = stream(body("Question: 1. Thought: a", "b"))
    assert extends(stream(body("Question: 1. Thought: a")), current)
    assert loose.find(current, None) == "msg_one"


def test_baselines_forget_the_oldest() -> None:
    known = Baselines(kept=2)
    for k in range(3):
        known.remember(stream(body(f"task {k}")), f"key {k}", f"msg_{k}")
    assert known.find(stream(body("task 0", "more")), "key 0") is None
    assert known.find(stream(body("task 2", "more")), "key 2") == "msg_2"
