"""OpenTelemetry GenAI spans for warmloop's own runs, read back from the SDK's in-memory
exporter: one client span per request with the conversation id and cache usage."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.agent.run import RequestFailed
from warmloop.telemetry import instrument, provider_name

ROOT = Path(__file__).resolve().parents[1]


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return {"Paris": "France"}.get(city, "unknown") + " " + "details " * 40


def traced() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def test_every_request_is_one_genai_span_with_cache_usage() -> None:
    exporter, provider = traced()
    inner = ScriptedModel(
        [call("lookup", city="Paris"), call("lookup", city="Rome"), call("submit", answer="x")],
        name="anthropic:claude-sonnet-4-6",
    )
    model = instrument(inner, tracer=provider.get_tracer("test"))
    run = Agent(model, [lookup]).run_sync("Where is Paris?", conversation_id="conv-7")
    spans = exporter.get_finished_spans()
    assert len(spans) == len(run.requests) == 3
    for span, record in zip(spans, run.requests, strict=True):
        attributes = dict(span.attributes or {})
        assert span.name == "chat claude-sonnet-4-6"
        assert span.kind == SpanKind.CLIENT
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "anthropic"
        assert attributes["gen_ai.request.model"] == "claude-sonnet-4-6"
        assert attributes["gen_ai.conversation.id"] == "conv-7"
        assert attributes["gen_ai.usage.input_tokens"] == record.usage.prompt_tokens
        assert attributes["gen_ai.usage.output_tokens"] == record.usage.output_tokens
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == record.usage.cache_read_tokens
        assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 0
    later = [dict(s.attributes or {}) for s in spans[1:]]
    assert all(int(str(a["gen_ai.usage.cache_read.input_tokens"])) > 0 for a in later)


def test_a_failed_request_ends_its_span_with_an_error() -> None:
    exporter, provider = traced()
    model = instrument(ScriptedModel([], name="openai:gpt-5"), tracer=provider.get_tracer("t"))
    with pytest.raises(RequestFailed):
        Agent(model, [lookup]).run_sync("Where is Paris?")
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "ProviderError"


def test_provider_names_follow_the_genai_conventions() -> None:
    assert provider_name("gemini:gemini-2.5-flash") == "gcp.gemini"
    assert provider_name("openai-chat:gpt-5") == "openai"
    assert provider_name("local") == "local"


def test_instrument_is_exported_at_the_top_level() -> None:
    import warmloop

    assert warmloop.instrument is instrument
    assert "instrument" in warmloop.__all__


def test_without_the_otel_extra_warmloop_imports_and_instrument_names_the_extra() -> None:
    # A fresh interpreter where OpenTelemetry cannot be imported (None in sys.modules
    # makes any import of it fail): `import warmloop` works, `instrument` says what to do.
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from warmloop import ConfigurationError, ScriptedModel, instrument\n"
        "try:\n"
        "    instrument(ScriptedModel([]))\n"
        "except ConfigurationError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'warmloop[otel]'" in done.stdout
