"""What a `chat` span says of each reply (issue 45), on every wire through its official SDK
against a loopback server, streamed and not: the provider's id of the reply
(`gen_ai.response.id`), why it ended (`gen_ai.response.finish_reasons`) and every prompt
token as `gen_ai.usage.input_tokens`, the same count as the run's `usage.input_tokens`;
and no message content unless it is opted in."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.fake_servers import Said, ToolUse
from tests.support.wire_servers import WireServer, connect, scripted
from warmloop import Agent, Run, instrument
from warmloop.providers.base import Model

REPLIES = [ToolUse("submit", {"answer": "France"}, cache_read=300, cache_write=20)]
EXPECTED = {
    "anthropic": ("msg_1", ("tool_use",)),
    "openai": ("resp_1", ("completed",)),
    "openai-chat": ("chatcmpl-1", ("tool_calls",)),
    "gemini": ("r1", ("STOP",)),
}


def chat_spans(model: Model, *, streamed: bool) -> tuple[list[ReadableSpan], Run]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(instrument(model, tracer=provider.get_tracer("t")), name="geo")

    async def streaming() -> Run:
        async with agent.iter("Where is Paris?") as events:
            _ = [event async for event in events]
        return events.run

    run = asyncio.run(streaming()) if streamed else agent.run_sync("Where is Paris?")
    spans = list(exporter.get_finished_spans())
    (runs,) = [s for s in spans if s.name == "invoke_agent geo"]
    assert dict(runs.attributes or {})["gen_ai.agent.name"] == "geo"
    return [s for s in spans if s.name.startswith("chat ")], run


@pytest.mark.parametrize("streamed", [False, True], ids=["sent", "streamed"])
@pytest.mark.parametrize("prefix", list(EXPECTED))
def test_a_chat_span_carries_the_replys_id_and_finish_reasons(
    wire_server: WireServer, prefix: str, streamed: bool
) -> None:
    wire_server.serve(scripted(REPLIES))
    (span,), run = chat_spans(connect(wire_server, prefix), streamed=streamed)
    attributes = dict(span.attributes or {})
    response_id, reasons = EXPECTED[prefix]
    assert attributes["gen_ai.response.id"] == response_id
    assert tuple(attributes["gen_ai.response.finish_reasons"]) == reasons  # type: ignore[arg-type]
    usage = run.usage
    assert attributes["gen_ai.usage.input_tokens"] == usage.input_tokens
    assert usage.input_tokens == usage.uncached_tokens + usage.cache_read_tokens + (
        usage.cache_write_tokens
    )
    assert usage.cache_read_tokens == 300
    assert not any(key.endswith("messages") for key in attributes)  # content is opt-in


def test_a_text_reply_ends_as_the_provider_says(wire_server: WireServer) -> None:
    wire_server.serve(scripted([Said("France.")]))
    (span,), _ = chat_spans(connect(wire_server, "anthropic"), streamed=False)
    assert tuple(dict(span.attributes or {})["gen_ai.response.finish_reasons"]) == (  # type: ignore[arg-type]
        "end_turn",
    )
