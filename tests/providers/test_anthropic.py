"""The Anthropic provider through the official SDK, its default transport sending real HTTP/1.1
to a keep-alive loopback server (`wire_server`).

Responses are shaped as the Messages API documents them ("Messages > Create a Message",
response body: https://docs.anthropic.com/en/api/messages); errors as "API > Errors > Error
shapes" (https://docs.anthropic.com/en/api/errors). Every captured body goes to `wire_log`,
so the autouse fixture checks I1 on the bytes the SDK really sent.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import anthropic
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.scenario import TOOLS, Step, steps
from tests.support.wire import WireLog, wire_stream
from tests.support.wire_servers import WireServer, anthropic_client
from warmloop import (
    Agent,
    AssistantTurn,
    ConfigurationError,
    Notice,
    RequestFailed,
    SystemText,
    Toolbox,
    ToolCall,
    ToolResult,
    Transcript,
    UserText,
    check_pairing,
)
from warmloop.outputs import Outputs
from warmloop.providers.anthropic.cache import MAX_BREAKPOINTS, breakpoint_positions, reads_write
from warmloop.providers.anthropic.format import EMPTY_TURN
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.select import resolve_model

MODEL = "claude-sonnet-4-6"
NOTICE = "<system-reminder>One step left: call submit next.</system-reminder>"
SUBMIT = Step(calls=(("submit", {"answer": "finished"}),))
AFTER_LAST_BREAKPOINT = 5  # tokens the API reports as `input_tokens` in the fake replies
SPECS = (*Toolbox(TOOLS).specs(), Outputs().spec)  # what an Agent over TOOLS sends


def message_response(step: Step, k: int, calls_from: int = 0) -> dict[str, Any]:
    """Reply k as documented: "Messages > Create a Message" response body, with thinking
    blocks as in "Extended thinking > How extended thinking works" (thinking + signature)."""
    content: list[dict[str, Any]] = []
    if step.reasoning:
        content.append({"type": "thinking", "thinking": step.reasoning, "signature": f"sig{k}=="})
    if step.text:
        content.append({"type": "text", "text": step.text})
    for i, (name, args) in enumerate(step.calls):
        content.append(
            {"type": "tool_use", "id": f"toolu_{k:02d}_{i}", "name": name, "input": args}
        )
    return {
        "id": f"msg_{k:03d}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": "tool_use" if step.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": AFTER_LAST_BREAKPOINT, "output_tokens": 7 + k},
    }


def error_response(status: int, kind: str) -> httpx2.Response:
    """An error as in "API > Errors > Error shapes"; `retry-after-ms: 1` keeps retries fast
    (this SDK treats a zero wait as absent and would back off for half a second)."""
    body = {"type": "error", "error": {"type": kind, "message": f"{kind} (test)"}}
    return httpx2.Response(status, json=body, headers={"retry-after-ms": "1"})


class FakeAnthropic:
    """Answers Messages requests from scenario steps; records every body it was sent."""

    def __init__(
        self,
        wire: WireServer,
        script: Sequence[Step],
        wire_log: WireLog | None = None,
        failures: Mapping[int, httpx2.Response] | None = None,
    ) -> None:
        self.wire = wire
        self.script = list(script)
        self.wire_log = wire_log
        self.failures = dict(failures or {})
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self.replies: list[dict[str, Any]] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        if self.wire_log is not None:
            self.wire_log.record("anthropic", wire_stream(request.content, "messages"))
        if self.requests in self.failures:
            return self.failures[self.requests]
        body = json.loads(request.content)
        self.bodies.append(body)
        reply = message_response(self.script[len(self.replies)], len(self.replies) + 1)
        reply["usage"].update(self.cache_usage())
        self.replies.append(reply)
        return httpx2.Response(200, json=reply)

    def cache_usage(self) -> dict[str, Any]:
        """Cache counters as a warm prefix cache reports them ("Prompt caching > Tracking
        cache performance"; the per-TTL split is "Prompt caching > 1-hour cache duration")."""
        tokens = [len(wire_stream(b, "messages")) // 4 for b in self.bodies[-2:]]
        read = tokens[0] if len(tokens) == 2 else 0
        written = tokens[-1] - read - AFTER_LAST_BREAKPOINT
        return {
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written,
                "ephemeral_1h_input_tokens": 0,
            },
        }

    def model(self, **options: Any) -> AnthropicModel:
        client = anthropic_client(self.wire, self.handler, max_retries=2)
        return AnthropicModel(MODEL, client=client, **options)


OFFLINE = anthropic.AsyncAnthropic(api_key="sk-test")  # never sends; one is enough


def offline_model(**options: Any) -> AnthropicModel:
    """A model for pure rendering (a fresh renderer, so nothing is memoised yet)."""
    return AnthropicModel(MODEL, client=OFFLINE, **options)


def strip_markers(value: Any) -> str:
    return wire_stream({"x": value}, "none")


async def run_scenario(server: FakeAnthropic, model: AnthropicModel | None = None) -> Any:
    agent = Agent(model or server.model(), tools=TOOLS, max_steps=30)
    return await agent.run("Use the tools, then submit the answer 'finished'.")


async def test_thirty_step_session_stays_warm_on_the_wire(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = FakeAnthropic(wire_server, steps(), wire_log)
    run = await run_scenario(server)
    assert run.outputs.model_dump() == {"answer": "finished"}
    check_pairing(run.transcript.messages)
    assert len(server.bodies) == 30
    assert len({json.dumps(b["tools"]) for b in server.bodies}) == 1
    assert len({json.dumps(b["system"]) for b in server.bodies}) == 1
    for body in server.bodies:
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["user", "assistant"] * (len(roles) // 2) + ["user"]
    # Every assistant turn goes back exactly as received: thinking signatures included.
    last = server.bodies[-1]["messages"]
    assert [m["content"] for m in last[1::2]] == [r["content"] for r in server.replies[:-1]]
    assert any(b["type"] == "thinking" for m in last[1::2] for b in m["content"])
    calls = [c for m in run.transcript if isinstance(m, AssistantTurn) for c in m.tool_calls]
    sent = [b for r in server.replies for b in r["content"] if b["type"] == "tool_use"]
    assert [c.arguments for c in calls] == [
        json.dumps(b["input"], separators=(",", ":")) for b in sent
    ]
    total = run.usage
    assert total.cache_read_tokens == sum(
        r["usage"]["cache_read_input_tokens"] for r in server.replies
    )
    assert total.cache_write_tokens == sum(
        r["usage"]["cache_creation_input_tokens"] for r in server.replies
    )
    assert total.uncached_tokens == AFTER_LAST_BREAKPOINT * 30
    assert total.input_tokens == (
        total.uncached_tokens + total.cache_read_tokens + total.cache_write_tokens
    )


async def test_notice_is_rendered_in_place_after_the_results(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = FakeAnthropic(wire_server, steps(), wire_log)
    await run_scenario(server)
    final = server.bodies[-1]["messages"][-1]["content"]
    assert [b["type"] for b in final] == ["tool_result", "text"]
    assert final[0]["is_error"] is True
    assert final[-1]["text"] == NOTICE
    assert NOTICE not in json.dumps(server.bodies[-1]["system"])
    assert all(NOTICE not in json.dumps(b) for b in server.bodies[:-1])


async def test_breakpoints_reach_the_previous_write_even_after_wide_steps(
    wire_server: WireServer,
    wire_log: WireLog,
) -> None:
    wide = Step(calls=tuple(("lookup", {"key": f"w{i}"}) for i in range(12)))
    server = FakeAnthropic(wire_server, [*steps(8)[:-1], wide, *steps(6)[:-1], SUBMIT], wire_log)
    await run_scenario(server)
    tools, system = len(server.bodies[0]["tools"]), len(server.bodies[0]["system"])
    positions = [breakpoint_positions(b) for b in server.bodies]
    for before, after in itertools.pairwise(positions):
        assert len(after) <= MAX_BREAKPOINTS
        assert after[:2] == [tools - 1, tools + system - 1]
        assert reads_write(before[-1], after)
    # The wide step puts the previous write 24 blocks back: the newest breakpoint alone
    # would miss it, which is what the second message breakpoint is for.
    gaps = [after[-1] - before[-1] for before, after in itertools.pairwise(positions)]
    assert max(gaps) >= 24
    widest = gaps.index(max(gaps))
    assert not reads_write(positions[widest][-1], positions[widest + 1][-1:])


def _turn(k: int, width: int, thinks: bool) -> AssistantTurn:
    blocks: list[dict[str, Any]] = []
    if thinks:
        blocks.append({"type": "thinking", "thinking": f"t{k}", "signature": f"s{k}"})
    blocks += [
        {"type": "tool_use", "id": f"toolu_{k}_{i}", "name": "lookup", "input": {"key": str(i)}}
        for i in range(width)
    ] or [{"type": "text", "text": f"no call {k}"}]
    calls = tuple(
        ToolCall(f"toolu_{k}_{i}", "lookup", json.dumps({"key": str(i)})) for i in range(width)
    )
    return AssistantTurn(tool_calls=calls, provider_details={"anthropic": {"content": blocks}})


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.booleans(), st.booleans()), max_size=10))
def test_any_session_keeps_prefix_breakpoint_limit_and_lookback(
    turns: list[tuple[int, bool, bool]],
) -> None:
    model = offline_model(cache_ttl="1h")
    specs = SPECS
    transcript = Transcript([SystemText("Be brief."), UserText("task")])
    previous = model.render(transcript, specs)
    for k, (width, thinks, notice) in enumerate(turns, 1):
        turn = _turn(k, width, thinks)
        transcript.append(turn)
        transcript.extend([ToolResult(c.id, c.name, f"r{c.id}") for c in turn.tool_calls])
        transcript.append(Notice(f"n{k}") if notice or not width else UserText(f"go {k}"))
        rendered = model.render(transcript, specs)
        positions = breakpoint_positions(rendered.payload)
        assert rendered.stream.startswith(previous.stream)
        assert len(positions) <= MAX_BREAKPOINTS
        assert reads_write(breakpoint_positions(previous.payload)[-1], positions)
        roles = [m["role"] for m in rendered.payload["messages"]]
        assert all(a != b for a, b in itertools.pairwise(roles))
        assert '"ttl": "1h"' in json.dumps(rendered.payload["messages"][-1])
        previous = rendered


async def test_follow_up_task_merges_into_the_result_turn(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = FakeAnthropic(wire_server, [steps()[0], SUBMIT, SUBMIT], wire_log)
    agent = Agent(server.model(), tools=TOOLS)
    first = await agent.run("first task")
    second = await agent.run("a follow-up question", history=first.transcript)
    assert second.transcript.conversation == first.transcript.conversation  # same routing key
    merged = server.bodies[2]["messages"][-1]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "text"]
    assert merged[0]["content"] == "Submitted."
    assert merged[1]["text"] == "a follow-up question"


async def test_extract_prompt_merges_after_the_results(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = FakeAnthropic(wire_server, [steps()[0], steps()[0], SUBMIT], wire_log)
    run = await Agent(server.model(), tools=TOOLS, max_steps=2).run("task")
    assert run.extracted
    merged = server.bodies[-1]["messages"][-1]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "text"]
    assert "step budget is used up" in merged[1]["text"]


@pytest.mark.parametrize(
    ("status", "kind"),
    [(429, "rate_limit_error"), (529, "overloaded_error"), (500, "api_error")],
)
async def test_transient_errors_are_retried_by_the_sdk(
    wire_server: WireServer, wire_log: WireLog, status: int, kind: str
) -> None:
    server = FakeAnthropic(
        wire_server, [SUBMIT], wire_log, failures={1: error_response(status, kind)}
    )
    run = await run_scenario(server)
    assert server.requests == 2
    assert run.transcript.assistant_turns() == 1
    assert run.outputs.model_dump() == {"answer": "finished"}


async def test_retries_exhausted_is_a_provider_error_naming_the_cause(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    busy = {n: error_response(429, "rate_limit_error") for n in (1, 2)}
    server = FakeAnthropic(wire_server, [SUBMIT], wire_log, failures=busy)
    with pytest.raises(RequestFailed, match=r"after the SDK's retries \(429\): rate_limit_error"):
        await run_scenario(server, server.model(max_retries=1))
    assert server.requests == 2


@pytest.mark.parametrize(
    ("status", "kind", "advice"),
    [
        (401, "authentication_error", "ANTHROPIC_API_KEY"),
        (403, "permission_error", MODEL),
        (400, "invalid_request_error", "Fix the request"),
        (404, "not_found_error", MODEL),
    ],
)
async def test_final_errors_fail_at_once_and_keep_the_transcript(
    wire_server: WireServer, wire_log: WireLog, status: int, kind: str, advice: str
) -> None:
    server = FakeAnthropic(
        wire_server, [steps()[0], SUBMIT], wire_log, failures={2: error_response(status, kind)}
    )
    with pytest.raises(RequestFailed) as info:
        await run_scenario(server)
    assert server.requests == 2
    assert advice in str(info.value)
    assert f"({status})" in str(info.value)
    assert len(info.value.transcript) == 4  # system, task, assistant turn, tool result
    check_pairing(info.value.transcript.messages)


async def test_timeout_after_retries_is_a_provider_error() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = anthropic.AsyncAnthropic(api_key="sk-test", http_client=http)
    model = AnthropicModel(MODEL, client=client, max_retries=0, timeout=5.0)
    with pytest.raises(RequestFailed, match="did not answer in time"):
        await Agent(model, tools=TOOLS).run("task")


async def test_usage_with_the_documented_one_hour_split(wire_server: WireServer) -> None:
    # "Prompt caching > 1-hour cache duration": usage with the per-TTL `cache_creation`.
    usage = {
        "input_tokens": 2048,
        "cache_read_input_tokens": 1800,
        "cache_creation_input_tokens": 248,
        "output_tokens": 503,
        "cache_creation": {"ephemeral_1h_input_tokens": 100, "ephemeral_5m_input_tokens": 148},
    }
    reply = message_response(SUBMIT, 1) | {"usage": usage}
    client = anthropic_client(wire_server, lambda r: httpx2.Response(200, json=reply), api_key="k")
    model = AnthropicModel(MODEL, client=client)
    run = await Agent(model, tools=TOOLS).run("task")
    got = run.usage
    # Anthropic's input_tokens is the uncached part; ours is the whole prompt (issue 45).
    assert (got.uncached_tokens, got.cache_read_tokens, got.cache_write_tokens) == (2048, 1800, 248)
    assert (got.output_tokens, got.cache_write_1h_tokens) == (503, 100)
    assert got.input_tokens == got.prompt_tokens == 2048 + 1800 + 248


async def test_one_hour_ttl_and_thinking_reach_the_wire(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = FakeAnthropic(wire_server, [steps()[1], SUBMIT], wire_log)
    thinking = {"type": "enabled", "budget_tokens": 2048}
    await run_scenario(server, server.model(cache_ttl="1h", thinking=thinking, max_tokens=8000))
    body = server.bodies[-1]
    assert body["thinking"] == thinking
    assert body["max_tokens"] == 8000
    markers = [b["cache_control"] for b in [body["tools"][-1], body["system"][-1]]]
    markers += [m["content"][-1]["cache_control"] for m in body["messages"][::2]]
    assert markers == [{"type": "ephemeral", "ttl": "1h"}] * 4


async def test_a_loaded_transcript_renders_the_same_bytes(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = FakeAnthropic(wire_server, steps(12), wire_log)
    run = await run_scenario(server)
    assert Agent(offline_model(), tools=TOOLS).tool_specs == SPECS
    memoised = server.model()
    first = memoised.render(run.transcript, SPECS)
    again = offline_model().render(Transcript.load(run.transcript.dump()), SPECS)
    assert json.dumps(again.payload) == json.dumps(first.payload)
    assert again.stream == first.stream
    assert json.dumps(memoised.render(run.transcript, SPECS).payload) == json.dumps(first.payload)


def test_turns_from_other_providers_and_mid_run_system_text_render_in_place() -> None:
    transcript = Transcript(
        [
            SystemText("Be brief."),
            UserText("early"),
            AssistantTurn(text="hm"),
            UserText("task"),
            AssistantTurn(
                text="ok", reasoning="unsigned", tool_calls=(ToolCall("call_1_0", "add", "{bad"),)
            ),
            ToolResult("call_1_0", "add", "not JSON", is_error=True),
            SystemText("late rule"),
            AssistantTurn(),
            UserText("go on"),
        ]
    )
    transcript.fold(1, 3, "earlier work")
    payload = offline_model().render(transcript, []).payload
    assert payload["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "tools" not in payload
    opening, assistant, results, empty, last = payload["messages"]
    assert opening["content"] == [
        {"type": "text", "text": "<conversation-summary>earlier work</conversation-summary>"},
        {"type": "text", "text": "task"},
    ]
    assert assistant["content"] == [
        {"type": "text", "text": "ok"},
        {"type": "tool_use", "id": "call_1_0", "name": "add", "input": {"raw_arguments": "{bad"}},
    ]
    texts = [b.get("text") for b in results["content"]]
    assert texts == [None, "<system-reminder>late rule</system-reminder>"]
    assert empty["content"] == [{"type": "text", "text": EMPTY_TURN}]
    assert strip_markers(last) == strip_markers(
        {"role": "user", "content": [{"type": "text", "text": "go on"}]}
    )


def test_configuration_errors_name_what_to_change(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(MODEL)
    with pytest.raises(ConfigurationError, match="cache_ttl"):
        offline_model(cache_ttl="10m")
    with pytest.raises(ConfigurationError, match="budget_tokens"):
        offline_model(thinking={"type": "enabled", "budget_tokens": 4096}, max_tokens=4096)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    model = resolve_model(f"anthropic:{MODEL}")
    assert isinstance(model, AnthropicModel)
    assert model.name == f"anthropic:{MODEL}"
