"""`diagnose=True`: an agent asks the provider for its own cache verdict, and its run checks
the guard's reading against it: the verdict lands in each `RequestRecord`, a disagreement is
a run warning (never raised), and a lost record is the provider's, never a disagreement.

Through the official SDKs, their default transports sending real HTTP/1.1 to a keep-alive
loopback server (`wire_server`), answering in the documented
shapes: Anthropic "Cache diagnostics"
(https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics: beta header
`cache-diagnosis-2026-04-07`, `diagnostics.previous_message_id` null on the first turn, the
response's `diagnostics.cache_miss_reason`, `diagnostics: null` when nothing diverged) and
OpenAI "Prompt cache diagnostics"
(https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics:
`prompt_cache_options.comparison_response_id`, the response's `prompt_cache_diagnostics`).
Every body goes to `wire_log` with the diagnostic fields left out (they name the previous
response, so they differ on every request by design and are no part of the prompt).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from tests.providers.test_anthropic import message_response
from tests.providers.test_openai_responses import output_items, response_body, usage_json
from tests.support.scenario import TOOLS, steps
from tests.support.wire import CACHE_MARKERS, WireLog, wire_stream
from tests.support.wire_servers import WireServer, anthropic_client, openai_client
from warmloop import Agent, ConfigurationError
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.anthropic.readers import BETA as ANTHROPIC_BETA
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.select import resolve_model

Diagnostics = Callable[[int], dict[str, Any] | None]


class FakeAnthropic:
    """Messages replies from scenario steps, with `diagnostics(k)` on reply k (from 1)."""

    def __init__(
        self, wire: WireServer, n: int, wire_log: WireLog, diagnostics: Diagnostics
    ) -> None:
        self.wire = wire
        self.script = steps(n)
        self.wire_log = wire_log
        self.diagnostics = diagnostics
        self.requests: list[httpx2.Request] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        ignore = CACHE_MARKERS | {"diagnostics"}
        self.wire_log.record("anthropic", wire_stream(request.content, "messages", ignore=ignore))
        k = len(self.requests)
        reply = message_response(self.script[(k - 1) % len(self.script)], k)
        reply["id"] = f"msg_{k:03d}"
        reply["diagnostics"] = self.diagnostics(k)
        return httpx2.Response(200, json=reply)

    def model(self, **options: Any) -> AnthropicModel:
        client = anthropic_client(self.wire, self.handler, max_retries=0)
        return AnthropicModel("claude-sonnet-4-6", client=client, **options)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]


def reason(kind: str, missed: int | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"type": kind}
    if missed is not None:
        found["cache_missed_input_tokens"] = missed
    return {"cache_miss_reason": found}


def anthropic_verdicts(k: int) -> dict[str, Any] | None:
    # 3: the provider says the system prompt changed, which the guard did not see;
    # 4: the provider lost its record of request 3; the rest: nothing diverged
    return {3: reason("system_changed", 1200), 4: reason("previous_message_not_found")}.get(k)


async def test_anthropic_diagnose_checks_the_guard_against_the_providers_verdict(
    wire_server: WireServer,
    wire_log: WireLog,
) -> None:
    server = FakeAnthropic(wire_server, 5, wire_log, anthropic_verdicts)
    run = await Agent(server.model(diagnose=True), tools=TOOLS, max_steps=10).run("Work.")
    bodies = server.bodies()
    assert [b["diagnostics"]["previous_message_id"] for b in bodies] == [
        None,  # the first turn opts in
        "msg_001",
        "msg_002",
        "msg_003",
        "msg_004",
    ]
    assert all(r.headers["anthropic-beta"] == ANTHROPIC_BETA for r in server.requests)
    verdicts = [record.verdict for record in run.requests]
    assert verdicts[0] is None  # nothing compared
    assert [v.reason if v else None for v in verdicts[1:]] == [
        "no divergence",
        "system_changed",
        "previous_message_not_found",
        "no divergence",
    ]
    assert [record.agrees for record in run.requests] == [None, True, False, None, True]
    assert verdicts[3] is not None
    assert verdicts[3].provider_loss
    # the disagreement is reported, once, and the run finished regardless
    said = [w for w in run.warnings if "disagrees with the prefix guard" in w]
    assert len(said) == 1
    assert said[0].startswith("request 3: the provider's cache verdict (Anthropic: system_changed")
    assert run.outputs.model_dump() == {"answer": "finished"}


async def test_without_diagnose_nothing_is_added(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    server = FakeAnthropic(wire_server, 3, wire_log, anthropic_verdicts)
    run = await Agent(server.model(), tools=TOOLS, max_steps=10).run("Work.")
    assert all("diagnostics" not in body for body in server.bodies())
    assert all("anthropic-beta" not in request.headers for request in server.requests)
    assert all(record.verdict is None for record in run.requests)


async def test_a_follow_up_run_names_the_response_its_history_ended_with(
    wire_server: WireServer,
    wire_log: WireLog,
) -> None:
    server = FakeAnthropic(wire_server, 2, wire_log, lambda k: None)
    agent = Agent(server.model(diagnose=True), tools=TOOLS, max_steps=10)
    first = await agent.run("Work.")
    await agent.run("And once more.", history=first.transcript)
    named = [b["diagnostics"]["previous_message_id"] for b in server.bodies()]
    # the follow-up forks the conversation (keeping its routing key): it continues msg_002
    assert named == [None, "msg_001", "msg_002", "msg_003"]


class FakeResponses:
    """/v1/responses replies from scenario steps, with `prompt_cache_diagnostics` on every
    request that named a comparison response."""

    def __init__(self, wire: WireServer, n: int, wire_log: WireLog) -> None:
        self.wire = wire
        self.script = steps(n)
        self.wire_log = wire_log
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        ignore = CACHE_MARKERS | {"comparison_response_id"}
        stream = wire_stream(request.content, "input", ignore=ignore)
        self.wire_log.record(body["prompt_cache_key"], stream)
        k = len(self.bodies) - 1
        reply = response_body(k, output_items(k, self.script[k]), usage_json(2000, 0, 0, 20))
        if "comparison_response_id" in body.get("prompt_cache_options", {}):
            reply["prompt_cache_diagnostics"] = {"type": "cache_hit"}
        return httpx2.Response(200, json=reply)

    def model(self, name: str = "gpt-5.6", **options: Any) -> OpenAIResponsesModel:
        client = openai_client(self.wire, self.handler)
        # A stand-in for OpenAI's own API: the key is asked for (issue 45).
        return OpenAIResponsesModel(name, client=client, cache_key=True, **options)


async def test_openai_diagnose_names_the_response_each_request_continues(
    wire_server: WireServer,
    wire_log: WireLog,
) -> None:
    server = FakeResponses(wire_server, 4, wire_log)
    model = server.model(diagnose=True, prompt_cache_retention="30m")
    run = await Agent(model, tools=TOOLS, max_steps=10).run("Work.")
    assert [b["prompt_cache_options"] for b in server.bodies] == [
        {"ttl": "30m"},  # nothing to compare with yet
        {"ttl": "30m", "comparison_response_id": "resp_0000"},
        {"ttl": "30m", "comparison_response_id": "resp_0001"},
        {"ttl": "30m", "comparison_response_id": "resp_0002"},
    ]
    assert [r.verdict.reason if r.verdict else None for r in run.requests] == [
        None,
        "cache_hit",
        "cache_hit",
        "cache_hit",
    ]
    assert [r.agrees for r in run.requests] == [None, True, True, True]
    assert not [w for w in run.warnings if "disagrees" in w]


def test_diagnose_is_refused_where_the_provider_has_no_diagnostics() -> None:
    with pytest.raises(ConfigurationError, match=r"need GPT-5\.6 or later"):
        OpenAIResponsesModel("gpt-5", api_key="sk-test", diagnose=True)
    with pytest.raises(ConfigurationError, match="takes no option 'diagnose'"):
        resolve_model("openai-chat:gpt-5", api_key="sk-test", diagnose=True)
    with pytest.raises(ConfigurationError, match="diagnose must be true or false"):
        resolve_model("anthropic:claude-sonnet-4-6", api_key="sk-test", diagnose="yes")
    model = resolve_model("anthropic:claude-sonnet-4-6", api_key="sk-test", diagnose=True)
    assert isinstance(model, AnthropicModel)
    assert model.diagnose


async def test_the_verdict_is_a_span_attribute_when_traced(
    wire_server: WireServer, wire_log: WireLog
) -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from warmloop.telemetry import instrument

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = FakeAnthropic(wire_server, 3, wire_log, anthropic_verdicts)
    model = instrument(server.model(diagnose=True), tracer=provider.get_tracer("test"))
    await Agent(model, tools=TOOLS, max_steps=10).run("Work.")
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    said = [(span.attributes or {}).get("warmloop.cache.provider_verdict") for span in spans]
    assert said == [None, "no divergence", "system_changed"]
