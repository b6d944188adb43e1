"""The live guard's OpenTelemetry event: a request the proxy reported as a bust is also a
`chat <model>` client span (the GenAI conventions `telemetry` follows:
`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
`gen_ai.conversation.id`: the proxy's conversation id) carrying one span event,
`warmloop.cache.bust`, with the cause (`warmloop.cache.bust.cause`, the guard's kind) and
where the prefix moved (`warmloop.cache.bust.detail`: the character and the section), and,
where `--diagnose` asked the provider, its own verdict (`warmloop.cache.provider_verdict`,
as on an instrumented model's span). The span is made once the answer is read, so the
verdict is on it. The prompt's text (the guard's sentence, with what the prefix was and
became) is in the detail only where the application opted in to content capture, as the
GenAI conventions have it (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`):
telemetry backends are seldom where prompts may go.

Without the `otel` extra nothing is traced and OpenTelemetry is never imported; with it and
no tracer given, the global tracer provider's `warmloop` tracer is used (a no-op until the
application configures one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from warmloop.exchange.formats import model_name, model_spec
from warmloop.providers.records import WireFormat
from warmloop.telemetry import CAPTURE_VARIABLE, TRACER_NAME, content_captured, provider_name
from warmloop.wire.guard import Bust
from warmloop.wire.verdict import ProviderVerdict

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

BUST_EVENT = "warmloop.cache.bust"
CAPTURE_CONTENT = CAPTURE_VARIABLE
"""The GenAI conventions' opt-in to message content on spans (`telemetry`'s, one switch)."""


def global_tracer() -> Tracer | None:
    """The global tracer provider's `warmloop` tracer, or None without the `otel` extra."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer(TRACER_NAME)


def trace_bust(
    tracer: Tracer,
    conversation: str,
    wire: WireFormat,
    request: Mapping[str, Any],
    path: str,
    bust: Bust,
    verdict: ProviderVerdict | None,
) -> None:
    """One `chat <model>` span for a busted request, with the `warmloop.cache.bust` event."""
    from opentelemetry.trace import SpanKind  # the tracer came from OpenTelemetry

    model = model_name(request, path)
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name(model_spec(wire, model)),
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": conversation,
    }
    detail = (
        str(bust)
        if content_captured()
        else f"cache bust at character {bust.position} ({bust.section})"
    )
    event = {"warmloop.cache.bust.cause": bust.kind, "warmloop.cache.bust.detail": detail}
    if verdict is not None:
        event["warmloop.cache.provider_verdict"] = verdict.reason
    with tracer.start_as_current_span(
        f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        span.add_event(BUST_EVENT, event)
