"""OpenTelemetry GenAI spans for warmloop's own runs (the `otel` extra).

`instrument(model)` returns a model that renders exactly as the one it wraps and sends
through it inside one client span per request, named `chat <model>`, with the GenAI
semantic-convention attributes: `gen_ai.operation.name`, `gen_ai.provider.name`,
`gen_ai.request.model`, `gen_ai.conversation.id` (the routing key: one conversation across
its runs and forks), and from the normalised usage `gen_ai.usage.input_tokens` (every
prompt token, cached or not), `gen_ai.usage.output_tokens`,
`gen_ai.usage.cache_read.input_tokens` and `gen_ai.usage.cache_creation.input_tokens`.
A model that asks for the provider's cache diagnostics (`diagnose=True`) adds the verdict as
`warmloop.cache.provider_verdict`. A failed request ends its span with status ERROR and
`error.type`. Nothing in the loop
changes: pass the instrumented model to `Agent`.

`instrument` is exported at the top level (`from warmloop import instrument`), so this
module imports OpenTelemetry only when a model is instrumented: without the extra,
`instrument` is a ConfigurationError naming it, and `import warmloop` never needs it.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from warmloop.errors import ConfigurationError
from warmloop.providers.base import Model, ModelResponse, Rendered, WrappedModel
from warmloop.providers.registry import provider_of, split_model_name

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

TRACER_NAME = "warmloop"


def opentelemetry_trace() -> ModuleType:
    """OpenTelemetry's `trace` API, or a ConfigurationError naming the extra to install."""
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigurationError(
            "instrument needs OpenTelemetry, which is not installed: pip install 'warmloop[otel]'"
        ) from exc
    return trace


def provider_name(model_name: str) -> str:
    """The GenAI provider name of a selection string such as `anthropic:claude-sonnet-4-6`
    (its provider record's `system_name`; the prefix of a provider warmloop does not know)."""
    record = provider_of(model_name)
    return record.system_name if record is not None else split_model_name(model_name)[0]


def request_model(model_name: str) -> str:
    """The model part of a selection string (the whole name when it has no provider)."""
    return split_model_name(model_name)[1] if ":" in model_name else model_name


class InstrumentedModel(WrappedModel):
    """A model that traces every request of the model it wraps (see `instrument`)."""

    def __init__(self, model: Model, tracer: Tracer) -> None:
        super().__init__(model)
        self.tracer = tracer
        opentelemetry_trace()  # without the extra: refused here, never mid-run

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send through the wrapped model inside a GenAI client span."""
        from opentelemetry.trace import SpanKind, Status, StatusCode  # loaded by __init__

        model = request_model(self.name)
        attributes: dict[str, str] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(self.name),
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": session_id,
        }
        with self.tracer.start_as_current_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                response = await self.model.send(rendered, session_id=session_id)
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                raise
            usage = response.usage
            span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
            if response.verdict is not None:  # the provider's own cache verdict (`diagnose`)
                span.set_attribute("warmloop.cache.provider_verdict", response.verdict.reason)
            return response


def instrument(model: Model, *, tracer: Tracer | None = None) -> InstrumentedModel:
    """`model`, sending every request inside an OpenTelemetry GenAI span. `tracer`
    defaults to the global tracer provider's `warmloop` tracer."""
    if not isinstance(model, Model):
        raise ConfigurationError(f"instrument needs a warmloop Model, got {model!r}")
    trace = opentelemetry_trace()
    return InstrumentedModel(model, tracer or trace.get_tracer(TRACER_NAME))
