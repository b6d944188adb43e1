"""The prefix guard reads the payload itself: each way a cache breaks is reported where and
why it happened, at run time and across sessions of one agent."""

from __future__ import annotations

import copy
from typing import Any

import anthropic
import pytest

from warmloop import Agent, ScriptedModel, SystemText, Transcript, UserText, call, tool
from warmloop.messages import AssistantTurn, ToolCall, ToolResult
from warmloop.outputs import Outputs
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.anthropic.record import LAYOUT as ANTHROPIC
from warmloop.providers.openai.record import CHAT
from warmloop.tools.schema import ToolSpec
from warmloop.wire.guard import PrefixGuard, compare, opening_bust
from warmloop.wire.stream import canonical_stream

OFFLINE = anthropic.AsyncAnthropic(api_key="offline")


@tool
def ping(host: str) -> str:
    """Ping a host."""
    return "pong"


@tool
def pong(host: str) -> str:
    """Answer a ping."""
    return "ping"


SPECS: tuple[ToolSpec, ...] = (ping.spec, pong.spec, Outputs().spec)


def anthropic_payload(system: str, steps: int = 1) -> dict[str, Any]:
    """What AnthropicModel really sends for a small session of `steps` tool calls."""
    messages: list[Any] = [SystemText(system), UserText("task")]
    for k in range(steps):
        call_id = f"call_{k}_0"
        messages += [
            AssistantTurn(tool_calls=(ToolCall(call_id, "ping", '{"host":"a"}'),)),
            ToolResult(call_id, "ping", f"pong {k}"),
        ]
    model = AnthropicModel("claude-sonnet-4-6", client=OFFLINE)
    payload: dict[str, Any] = model.render(Transcript(messages), SPECS).payload
    return payload


def check(before: dict[str, Any], after: dict[str, Any]) -> Any:
    return compare(canonical_stream(before, ANTHROPIC), canonical_stream(after, ANTHROPIC))


def test_an_append_only_session_extends_every_request() -> None:
    result = check(anthropic_payload("sys", 1), anthropic_payload("sys", 2))
    assert result.bust is None
    assert result.reusable == canonical_stream(anthropic_payload("sys", 1), ANTHROPIC).length


def test_a_timestamp_in_the_system_prompt_is_a_number_changed_in_system() -> None:
    result = check(anthropic_payload("Now: 10:00:01", 1), anthropic_payload("Now: 10:00:02", 2))
    assert result.bust is not None
    assert result.bust.section == "system"
    assert "a number changed in system" in result.bust.cause
    assert (result.bust.before[0], result.bust.after[0]) == ("1", "2")


def test_tools_reordered_in_the_payload_only_are_named_as_reordered() -> None:
    before, after = anthropic_payload("sys", 1), anthropic_payload("sys", 2)
    after["tools"] = list(reversed(after["tools"]))  # the payload only: nothing else moved
    result = check(before, after)
    assert result.bust is not None
    assert result.bust.section == "tools"
    assert result.bust.cause == "tools reordered (same tools, another order)"


def test_a_key_order_change_in_one_system_block_is_named_as_such() -> None:
    before, after = anthropic_payload("sys", 1), anthropic_payload("sys", 2)
    after["system"] = [dict(reversed(list(block.items()))) for block in after["system"]]
    result = check(before, after)
    assert result.bust is not None
    assert result.bust.section == "system"
    assert result.bust.cause.startswith("key order changed in system")


def test_an_edit_of_an_earlier_message_names_that_message() -> None:
    before, after = anthropic_payload("sys", 2), anthropic_payload("sys", 3)
    after["messages"] = copy.deepcopy(after["messages"])
    after["messages"][2]["content"][0]["content"] = "pong 0, edited"
    result = check(before, after)
    assert result.bust is not None
    assert result.bust.section == "message 2"
    assert "replaced or re-rendered" in result.bust.cause


def test_cache_markers_and_routing_keys_never_count_as_a_change() -> None:
    before, after = anthropic_payload("sys", 1), anthropic_payload("sys", 2)
    before["metadata"] = {"user_id": "a"}
    after["metadata"] = {"user_id": "b"}
    # markers sit on different blocks in the two payloads; the stream leaves them out
    assert "cache_control" not in canonical_stream(after, ANTHROPIC).text
    assert check(before, after).bust is None


def test_a_shorter_request_is_reported_as_trimmed_history() -> None:
    result = check(anthropic_payload("sys", 2), anthropic_payload("sys", 1))
    assert result.bust is not None
    assert "shorter" in result.bust.cause


def test_a_rewrite_is_a_maintenance_point_not_a_bust() -> None:
    guard = PrefixGuard()
    guard.check(canonical_stream(anthropic_payload("sys", 2), ANTHROPIC), revision=0)
    edited = anthropic_payload("sys", 3)
    edited["messages"][2]["content"][0]["content"] = "pruned"
    result = guard.check(canonical_stream(edited, ANTHROPIC), revision=1)
    assert result.maintenance
    assert result.bust is None
    assert 0 < result.reusable < result.total
    assert guard.busts == []


def test_chat_system_messages_are_the_system_section() -> None:
    def payload(system: str) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "system", "content": system}]}

    stream = canonical_stream(payload("Now 1"), CHAT)
    assert stream.opening[-1] == ("system", '{"role":"system","content":"Now 1"},')
    bust = opening_bust(stream, canonical_stream(payload("Now 2"), CHAT))
    assert bust is not None
    assert bust.section == "system"


def test_a_run_reports_no_bust_and_growing_reuse() -> None:
    model = ScriptedModel(
        [call("ping", host="a"), call("ping", host="b"), call("submit", answer="")]
    )
    run = Agent(model, [ping]).run_sync("task")
    fractions = [r.prefix.fraction for r in run.requests]
    assert fractions[0] < fractions[1] < fractions[2] <= 1
    assert all(r.prefix.bust is None for r in run.requests)


@pytest.mark.moves_cache_prefix(reason="reorders tools on purpose")
def test_tools_reordered_mid_run_are_caught_by_the_run_time_guard() -> None:
    class Flipping(ScriptedModel):
        """Reverses the tool order of every other payload, and changes nothing else."""

        def render(self, transcript: Transcript, tools: Any) -> Any:
            rendered = super().render(transcript, tools)
            if len(self.requests) % 2:
                rendered.payload["tools"] = list(reversed(rendered.payload["tools"]))
            return rendered

    model = Flipping([call("ping", host="a"), call("ping", host="b"), call("submit", answer="")])
    agent = Agent(model, [ping, pong])
    run = agent.run_sync("task")
    bust = run.requests[1].prefix.bust
    assert bust is not None
    assert (bust.section, bust.cause) == ("tools", "tools reordered (same tools, another order)")
    assert agent.busts == [bust, run.requests[2].prefix.bust]  # and flipped back


@pytest.mark.moves_cache_prefix(reason="changes the system prompt between sessions on purpose")
def test_fresh_sessions_of_one_agent_must_open_with_the_same_bytes() -> None:
    model = ScriptedModel([call("submit", answer="a"), call("submit", answer="b")])
    agent = Agent(model, [ping], instructions="Now: 10:00:01")
    first = agent.run_sync("one")
    assert first.requests[0].prefix.bust is None
    agent.instructions = "Now: 10:00:02"  # a timestamp in the seeded system prompt
    second = agent.run_sync("two")
    bust = second.requests[0].prefix.bust
    assert bust is not None
    assert bust.section == "system"
    assert "opens differently from the agent's earlier sessions" in bust.cause
    assert agent.busts == [bust]


def test_a_matching_opening_counts_as_reusable_for_a_fresh_session() -> None:
    model = ScriptedModel([call("submit", answer="a"), call("submit", answer="b")])
    agent = Agent(model, [ping])
    agent.run_sync("one")
    second = agent.run_sync("two")
    opening = sum(len(text) for _, text in model.requests[1].wire.opening)
    assert second.requests[0].prefix.reusable == opening > 0


# Round three (issue 38): a fresh session whose tools changed.


def test_a_fresh_session_whose_tools_changed_is_reported_as_changed_tools() -> None:
    def payload(tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        model = AnthropicModel("claude-sonnet-4-6", client=OFFLINE)
        rendered: dict[str, Any] = model.render(
            Transcript([SystemText("sys"), UserText("task")]), tools
        ).payload
        return rendered

    before = canonical_stream(payload(SPECS), ANTHROPIC)
    after = canonical_stream(payload((pong.spec, Outputs().spec)), ANTHROPIC)
    bust = opening_bust(before, after)
    assert bust is not None
    assert bust.section == "tools"
    assert "system" not in bust.cause
