"""Telemetry: `instrument(model)` traces each run as OpenTelemetry GenAI spans, a run span
holding a span per model request and per tool call (needs `pip install 'warmloop[otel]'`).
Here an in-memory exporter collects them; in production, export to your collector."""

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from warmloop import Agent, ScriptedModel, call, instrument, tool


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return {"Paris": "France"}.get(city, "unknown")


exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))

model = ScriptedModel(
    [call("lookup", city="Paris"), call("submit", answer="France")],
    name="anthropic:claude-sonnet-4-6",
)
agent = Agent(instrument(model, tracer=provider.get_tracer("example")), [lookup])
agent.run_sync("Where is Paris?", conversation_id="support-42")

spans = sorted(exporter.get_finished_spans(), key=lambda span: span.start_time or 0)
for span in spans:
    indent = "  " if span.parent is not None else ""
    print(f"{indent}{span.name}")
run_span = spans[0]
attributes = dict(run_span.attributes or {})
print("conversation:", attributes["gen_ai.conversation.id"])
print("cache read tokens:", attributes["gen_ai.usage.cache_read.input_tokens"])
print(f"cost: ${attributes['warmloop.cost_usd']:.6f}")
