"""OpenTelemetry GenAI spans for warmloop's own runs, read back from the SDK's in-memory
exporter: a run span holding one client span per request (with the conversation id and
cache usage) and one span per tool call, named as the GenAI semantic conventions for agents
name them (semantic-conventions v1.41.0, docs/gen-ai/gen-ai-agent-spans.md)."""

from __future__ import annotations

import json
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

from warmloop import Agent, ConfigurationError, ModelRetry, ScriptedModel, call, tool
from warmloop.agent.result import RequestFailed
from warmloop.telemetry import NO_TRACING, instrument, provider_name, tracing

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
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
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
    span, run_span = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "ProviderError"
    assert run_span.name == "invoke_agent"
    assert run_span.status.status_code == StatusCode.ERROR
    assert dict(run_span.attributes or {})["error.type"] == "RequestFailed"


def test_a_two_step_run_is_one_agent_span_over_its_requests_and_its_tool_call() -> None:
    exporter, provider = traced()
    inner = ScriptedModel(
        [call("lookup", city="Paris"), call("submit", answer="France")],
        name="anthropic:claude-sonnet-4-6",
    )
    model = instrument(inner, tracer=provider.get_tracer("test"))
    run = Agent(model, [lookup]).run_sync("Where is Paris?", conversation_id="conv-9")
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "chat claude-sonnet-4-6",
        "chat claude-sonnet-4-6",
        "execute_tool lookup",
        "invoke_agent",
    ]
    (agent,) = [s for s in spans if s.name == "invoke_agent"]
    (tool_span,) = [s for s in spans if s.name.startswith("execute_tool")]
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert agent.parent is None
    assert agent.kind == SpanKind.INTERNAL
    assert agent.context is not None
    for child in (*chats, tool_span):
        assert child.parent is not None
        assert child.parent.span_id == agent.context.span_id
        assert child.context is not None
        assert child.context.trace_id == agent.context.trace_id
    # In order: the first request, the tool it asked for, the second request.
    assert [s.name for s in sorted(spans[:-1], key=lambda s: s.start_time or 0)] == [
        "chat claude-sonnet-4-6",
        "execute_tool lookup",
        "chat claude-sonnet-4-6",
    ]
    attributes = dict(agent.attributes or {})
    usage = run.usage
    assert attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-6",
        "gen_ai.conversation.id": "conv-9",
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        "warmloop.cost_usd": run.cost().total,
    }
    assert usage.cache_read_tokens > 0
    assert tool_span.kind == SpanKind.INTERNAL
    assert dict(tool_span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": run.executions[0].result.call_id,
        "gen_ai.tool.type": "function",
    }
    assert tool_span.status.status_code == StatusCode.UNSET
    per_request = run.cost().per_request
    assert per_request is not None
    in_order = sorted(chats, key=lambda s: s.start_time or 0)
    for chat, paid in zip(in_order, per_request, strict=True):
        assert dict(chat.attributes or {})["warmloop.cost_usd"] == paid.total


@tool
def broken(city: str) -> str:
    """Always fails, and tells the model."""
    raise ModelRetry(f"no map of {city}")


def test_a_failed_tool_call_ends_its_span_with_an_error_and_the_run_goes_on() -> None:
    exporter, provider = traced()
    inner = ScriptedModel([call("broken", city="Paris"), call("submit", answer="x")])
    Agent(instrument(inner, tracer=provider.get_tracer("t")), [broken]).run_sync("Where?")
    (tool_span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool broken"]
    assert tool_span.status.status_code == StatusCode.ERROR
    assert dict(tool_span.attributes or {})["error.type"] == "tool_error"
    (agent,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert agent.status.status_code == StatusCode.UNSET


def test_an_uninstrumented_model_traces_no_run() -> None:
    assert tracing(ScriptedModel([])) is NO_TRACING


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


def test_a_span_a_tool_makes_is_a_child_of_its_tool_span() -> None:
    # A sync tool runs in a worker thread: the context is carried there, so what the tool
    # traces itself (an HTTP client's instrumentation, say) lands under its call.
    exporter, provider = traced()
    tracer = provider.get_tracer("tool")

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        with tracer.start_as_current_span("GET"):
            return "ok"

    inner = ScriptedModel([call("fetch", url="https://example.org"), call("submit", answer="ok")])
    Agent(instrument(inner, tracer=tracer), [fetch]).run_sync("Fetch it.")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    inside, around = spans["GET"], spans["execute_tool fetch"]
    assert inside.parent is not None
    assert around.context is not None
    assert inside.parent.span_id == around.context.span_id


def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


def captured_tool_span(monkeypatch: pytest.MonkeyPatch, **options: bool) -> dict[str, object]:
    exporter, provider = traced()
    model = instrument(
        ScriptedModel([call("shout", text="hi"), "HI"]),
        tracer=provider.get_tracer("t"),
        **options,
    )
    Agent(model, [shout]).run_sync("Shout hi.")
    spans = exporter.get_finished_spans()
    (tool_span,) = [s for s in spans if s.name == "execute_tool shout"]
    chats = [dict(s.attributes or {}) for s in spans if s.name.startswith("chat ")]
    return {**dict(tool_span.attributes or {}), "chats": chats}


def test_message_content_is_kept_out_of_spans_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    attributes = captured_tool_span(monkeypatch)
    assert "gen_ai.tool.call.arguments" not in attributes
    assert "gen_ai.tool.call.result" not in attributes
    assert all("gen_ai.output.messages" not in chat for chat in attributes["chats"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("how", ["parameter", "environment"])
def test_message_content_is_captured_when_opted_in(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "environment":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        attributes = captured_tool_span(monkeypatch)
    else:
        attributes = captured_tool_span(monkeypatch, capture_content=True)
    assert attributes["gen_ai.tool.call.arguments"] == '{"text": "hi"}'
    assert attributes["gen_ai.tool.call.result"] == "HI"
    chats = attributes["chats"]
    assert isinstance(chats, list)
    first = json.loads(chats[0]["gen_ai.output.messages"])
    assert first == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_0_0",
                    "name": "shout",
                    "arguments": '{"text": "hi"}',
                }
            ],
        }
    ]
    assert json.loads(chats[1]["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "HI"}
    ]


def test_the_parameter_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    attributes = captured_tool_span(monkeypatch, capture_content=False)
    assert "gen_ai.tool.call.result" not in attributes


@pytest.mark.parametrize(
    "spec",
    [
        "anthropic:claude-sonnet-4-6",
        "openai:gpt-5",
        "openai-chat:gpt-4o",
        "gemini:gemini-2.5-flash",
        "deepseek:deepseek-chat",
        "xai:grok-4",
        "openai-compatible:http://127.0.0.1:8000/v1#served",
    ],
)
def test_instrument_takes_every_model_string(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "XAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    model = instrument(spec)
    assert model.name == spec
    assert model.facts.context_window > 0


def test_an_agent_name_must_be_a_line_of_text() -> None:
    for bad in ("", "  ", "two\nlines", 42):
        with pytest.raises(ConfigurationError, match="name must be"):
            Agent(ScriptedModel(), name=bad)  # type: ignore[arg-type]


def test_a_sub_agents_run_span_is_a_child_of_the_parents_tool_span() -> None:
    """A tree: the planner's `explore` call runs two explorers at once (`as_tool(parallel=
    True)`); each explorer's `invoke_agent explorer` span hangs under the planner's
    `execute_tool explore` span, which hangs under `invoke_agent planner`, and carries its
    own conversation id, derived from the planner's."""
    exporter, provider = traced()
    tracer = provider.get_tracer("test")

    def reply(rendered: object) -> object:
        messages = rendered.payload["messages"]  # type: ignore[attr-defined]
        task = next(m["content"] for m in messages if m["role"] == "user")
        return call("submit", answer=f"{task}: fine")

    explorer_model = ScriptedModel([reply] * 2, name="anthropic:claude-sonnet-4-6")  # type: ignore[list-item]
    explorer = Agent(instrument(explorer_model, tracer=tracer), name="explorer")
    planner_model = ScriptedModel(
        [call("explore", tasks=["lexer", "parser"]), call("submit", answer="planned")],
        name="anthropic:claude-sonnet-4-6",
    )
    planner = Agent(
        instrument(planner_model, tracer=tracer),
        [explorer.as_tool("explore", parallel=True)],
        name="planner",
    )
    run = planner.run_sync("Plan.")
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    [root] = [s for s in spans if s.name == "invoke_agent planner"]
    [tool_span] = [s for s in spans if s.name == "execute_tool explore"]
    children = [s for s in spans if s.name == "invoke_agent explorer"]
    assert len(children) == 2
    assert tool_span.parent is not None
    assert tool_span.parent.span_id == root.context.span_id
    for child in children:
        assert child.parent is not None
        assert by_id[child.parent.span_id] is tool_span
        attributes = dict(child.attributes or {})
        assert attributes["gen_ai.agent.name"] == "explorer"
        key = str(attributes["gen_ai.conversation.id"])
        assert key != run.transcript.conversation
        assert key.startswith(run.transcript.conversation[:40])
        chats = [s for s in spans if s.parent and s.parent.span_id == child.context.span_id]
        assert [s.name for s in chats] == ["chat claude-sonnet-4-6"]
    assert len({s.context.trace_id for s in spans}) == 1  # one trace: the tree
