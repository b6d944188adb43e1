"""The live guard's OpenTelemetry event (issue 34): a bust the proxy reports is also a
`chat <model>` span with a `warmloop.cache.bust` event naming its cause, and, with
`--diagnose` on a host that documents it, the provider's own verdict. Spans go to the SDK's
in-memory exporter, as the telemetry tests do.

Anthropic's verdict is its "Cache diagnostics" (beta `cache-diagnosis-2026-04-07`): the
request names the previous message (`diagnostics.previous_message_id`) and the answer says
why it missed (`diagnostics.cache_miss_reason.type`). As `tests/audit/test_record_diagnose.py`
does, the upstream is the proxy's own transport answering in the documented shapes, so the
proxy believes it talks to api.anthropic.com; the client is the official SDK over loopback."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.proxy.test_proxy_conversations import body
from tests.support.proxy_wire import Captured
from tests.support.wire_servers import WireServer
from warmloop.proxy.server import Proxy
from warmloop.proxy.tracing import BUST_EVENT

HANG_GUARD = 600.0  # only against a hang: a loaded machine never reaches it


def traced() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def test_a_bust_is_a_span_event_with_its_cause(wire_server: WireServer) -> None:
    exporter, provider = traced()
    wire_server.serve(Captured())
    tracer = provider.get_tracer("test")
    with Proxy(wire_server.url, None, guard=True, tracer=tracer).start() as proxy:
        client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
        first: Any = body("a", turns=2)["messages"]
        client.chat.completions.create(model="gpt-5", messages=first)
        # the framework re-renders an earlier tool result: the prefix moves at message 3
        rebuilt = [*first[:3], {"role": "assistant", "content": "Task a, step 0 (redone)."}]
        client.chat.completions.create(model="gpt-5", messages=[*rebuilt, *first[4:]])
        assert proxy.wait_handled(2, HANG_GUARD)
        (conversation,) = proxy.status()["by_conversation"]
    (span,) = exporter.get_finished_spans()  # the first request moved nothing
    assert span.name == "chat gpt-5"
    assert span.attributes is not None
    assert span.attributes["gen_ai.conversation.id"] == conversation["id"]
    assert span.attributes["gen_ai.provider.name"] == "openai"
    (event,) = span.events
    assert event.name == BUST_EVENT
    assert event.attributes is not None
    assert event.attributes["warmloop.cache.bust.cause"] == "history-rewritten"
    assert "message 3" in str(event.attributes["warmloop.cache.bust.detail"])
    assert "warmloop.cache.provider_verdict" not in event.attributes


def anthropic_upstream(request: httpx2.Request) -> httpx2.Response:
    """Messages as documented; a request that names `msg_1` missed: messages changed."""
    asked = json.loads(request.content).get("diagnostics") or {}
    named = asked.get("previous_message_id")
    reason = {"type": "messages_changed", "cache_missed_input_tokens": 900}
    data = json.dumps(
        {
            "id": "msg_1" if named is None else "msg_2",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1000, "output_tokens": 2},
            "diagnostics": {"cache_miss_reason": reason} if named == "msg_1" else None,
        }
    ).encode()
    headers = {"content-type": "application/json", "content-length": str(len(data))}
    return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(data))


def test_with_diagnose_the_event_carries_the_providers_verdict() -> None:
    exporter, provider = traced()
    transport = httpx2.MockTransport(anthropic_upstream)
    proxy = Proxy(
        "https://api.anthropic.com",
        None,
        transport=transport,
        diagnose=True,
        guard=True,
        tracer=provider.get_tracer("test"),
    )
    with proxy.start():
        client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
        system = "You fix bugs. " * 50
        first: Any = [
            {"role": "user", "content": "Fix the parser."},
            {"role": "assistant", "content": "Read parser.py."},
            {"role": "user", "content": "Go on."},
        ]
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=64, system=system, messages=first
        )
        rebuilt = [first[0], {"role": "assistant", "content": "Read parser.py again."}, first[2]]
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=64, system=system, messages=rebuilt
        )
        assert proxy.wait_handled(2, HANG_GUARD)
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    (event,) = span.events
    assert event.attributes is not None
    assert event.attributes["warmloop.cache.bust.cause"] == "history-rewritten"
    assert event.attributes["warmloop.cache.provider_verdict"] == "messages_changed"
