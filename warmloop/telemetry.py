"""OpenTelemetry GenAI spans for warmloop's own runs (the `otel` extra), after the GenAI
semantic conventions for agents (semantic-conventions v1.41.0,
docs/gen-ai/gen-ai-agent-spans.md and gen-ai-spans.md).

An agent whose model is instrumented traces each run as one `invoke_agent` span (kind
INTERNAL: the agent runs in this process) holding a `chat <model>` span per request and an
`execute_tool <name>` span per tool call (`tracing(model)`; an uninstrumented model traces
nothing and needs no OpenTelemetry). The run span carries `gen_ai.conversation.id`, the
request model and provider, the run's summed usage and `warmloop.cost_usd` when the model
is priced; a run that fails ends it with status ERROR and `error.type`.

`instrument(model)` returns a model that renders exactly as the one it wraps and sends
through it inside one client span per request, named `chat <model>`, with the GenAI
semantic-convention attributes: `gen_ai.operation.name`, `gen_ai.provider.name`,
`gen_ai.request.model`, `gen_ai.conversation.id` (the routing key: one conversation across
its runs and forks), and from the normalised usage `gen_ai.usage.input_tokens` (every
prompt token, cached or not), `gen_ai.usage.output_tokens`,
`gen_ai.usage.cache_read.input_tokens` and `gen_ai.usage.cache_creation.input_tokens`,
and the request's `warmloop.cost_usd` when the model is priced. A model that asks for the
provider's cache diagnostics (`diagnose=True`) adds the verdict as
`warmloop.cache.provider_verdict`. A failed request ends its span with status ERROR and
`error.type`. Nothing in the loop changes: pass the instrumented model to `Agent`.

`instrument` is exported at the top level (`from warmloop import instrument`), so this
module imports OpenTelemetry only when a model is instrumented: without the extra,
`instrument` is a ConfigurationError naming it, and `import warmloop` never needs it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from warmloop.errors import ConfigurationError
from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.model_names import split_model_name
from warmloop.facts.pricing import cost, cost_report
from warmloop.facts.usage import Usage
from warmloop.messages import ToolCall, ToolResult
from warmloop.providers.base import Model, ModelResponse, Rendered, WrappedModel
from warmloop.providers.deferred import model_named
from warmloop.providers.deltas import Delta, stream_or_send
from warmloop.providers.registry import provider_of

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

TRACER_NAME = "warmloop"
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI conventions' switch for message content in spans (`true` to capture)."""


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


def set_usage(span: Span, usage: Usage, cost_usd: float | None) -> None:
    """The GenAI usage attributes of `usage` (input counts every prompt token, cached or
    not), and `warmloop.cost_usd` when it is priced."""
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
    span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
    if cost_usd is not None:
        span.set_attribute("warmloop.cost_usd", cost_usd)


def set_error(span: Span, error: BaseException | str) -> None:
    """End `span` as failed: status ERROR and `error.type` (an exception's class name)."""
    from opentelemetry.trace import Status, StatusCode  # loaded where a tracer was made

    name = error if isinstance(error, str) else type(error).__name__
    span.set_attribute("error.type", name)
    span.set_status(Status(StatusCode.ERROR, str(error)))


class RunSpan:
    """What a run reports into its `invoke_agent` span as it ends (nothing when untraced)."""

    def __init__(self, span: Span | None, model_name: str) -> None:
        self.span = span
        self.model_name = model_name

    def ended(self, usages: Sequence[Usage], facts: ModelFacts) -> None:
        """The run's summed usage and its cost under `facts`' price entry."""
        if self.span is not None:
            report = cost_report(self.model_name, usages, priced_as=facts.priced_as)
            set_usage(self.span, report.usage, report.total)


class ToolSpan:
    """What a tool call reports into its `execute_tool` span (nothing when untraced)."""

    def __init__(self, span: Span | None, capture: bool = False) -> None:
        self.span = span
        self.capture = capture

    def failed(self, reason: str) -> None:
        """The call's result is an error (a raised tool, bad arguments, a time-out)."""
        if self.span is not None:
            set_error(self.span, reason)

    def returned(self, result: ToolResult) -> None:
        """The call's result, as `gen_ai.tool.call.result`, where content is captured."""
        if self.span is not None and self.capture:
            self.span.set_attribute("gen_ai.tool.call.result", result.content)


class Tracing:
    """The run and tool spans of one instrumented model's runs; `NO_TRACING` (no tracer)
    makes none and never imports OpenTelemetry."""

    def __init__(self, tracer: Tracer | None, model_name: str, capture: bool = False) -> None:
        self.tracer = tracer
        self.model_name = model_name
        self.capture = capture
        """Message content (tool arguments and results, the model's replies) goes into
        spans: opted in (`capture_content`)."""

    @contextlib.contextmanager
    def run(self, conversation_id: str, agent_name: str | None = None) -> Iterator[RunSpan]:
        """An `invoke_agent` span around a run, current while it runs: the requests' and
        tool calls' spans are its children, and so are the runs a tool call starts (a
        sub-agent's `invoke_agent` span under the parent's `execute_tool` span). Named
        `invoke_agent <name>` with `gen_ai.agent.name` for a named agent. A run that
        raises ends it as failed."""
        if self.tracer is None:
            yield RunSpan(None, self.model_name)
            return
        from opentelemetry.trace import SpanKind

        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider_name(self.model_name),
            "gen_ai.request.model": request_model(self.model_name),
            "gen_ai.conversation.id": conversation_id,
        }
        if agent_name:
            attributes["gen_ai.agent.name"] = agent_name
        with self.tracer.start_as_current_span(
            f"invoke_agent {agent_name}" if agent_name else "invoke_agent",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            set_status_on_exception=False,
        ) as span:
            try:
                yield RunSpan(span, self.model_name)
            except BaseException as exc:
                set_error(span, exc)
                raise

    @contextlib.contextmanager
    def tool(self, call: ToolCall) -> Iterator[ToolSpan]:
        """An `execute_tool <name>` span around one tool call, a child of the run's; its
        arguments and result are on it where content is captured."""
        if self.tracer is None:
            yield ToolSpan(None)
            return
        from opentelemetry.trace import SpanKind

        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = call.arguments
        with self.tracer.start_as_current_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            set_status_on_exception=False,
        ) as span:
            try:
                yield ToolSpan(span, self.capture)
            except BaseException as exc:
                set_error(span, exc)
                raise


NO_TRACING = Tracing(None, "")


def tracing(model: Model) -> Tracing:
    """The run and tool spans for runs of `model`: its instrumented layer's, or none."""
    layer: object = model
    while isinstance(layer, WrappedModel):
        if isinstance(layer, InstrumentedModel):
            return layer.tracing
        layer = layer.model
    return NO_TRACING


class InstrumentedModel(WrappedModel):
    """A model that traces every request of the model it wraps (see `instrument`), and
    whose runs `tracing` traces."""

    def __init__(self, model: Model, tracer: Tracer, capture: bool = False) -> None:
        super().__init__(model)
        self.tracer = tracer
        opentelemetry_trace()  # without the extra: refused here, never mid-run
        self.tracing = Tracing(tracer, self.name, capture)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send through the wrapped model inside a GenAI client span."""
        with self.request_span(session_id) as span:
            response = await self.model.send(rendered, session_id=session_id)
            self.answered(span, response)
            return response

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """Streamed by the wrapped model where it streams (sent otherwise), inside the same
        span as `send`: tracing never costs a run its deltas."""
        with self.request_span(session_id) as span:
            response = await stream_or_send(
                self.model, rendered, session_id=session_id, deltas=deltas
            )
            self.answered(span, response)
            return response

    @contextlib.contextmanager
    def request_span(self, session_id: str) -> Iterator[Span]:
        """A `chat <model>` client span around one request; a request that raises ends it
        as failed (a keep-alive cancelled as its pause ends is no error)."""
        from opentelemetry.trace import SpanKind  # loaded by __init__

        model = request_model(self.name)
        attributes: dict[str, str] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(self.name),
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": session_id,
        }
        with self.tracer.start_as_current_span(
            f"chat {model}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except Exception as exc:
                set_error(span, exc)
                raise

    def answered(self, span: Span, response: ModelResponse) -> None:
        """What the response adds to its span: usage, cost, the provider's id of it and why
        it ended, the provider's cache verdict, and the reply itself where content is
        captured."""
        prices = self.facts.prices
        usage = response.usage
        set_usage(span, usage, None if prices is None else cost(usage, prices))
        if response.response_id:
            span.set_attribute("gen_ai.response.id", response.response_id)
        if response.finish_reasons:
            span.set_attribute("gen_ai.response.finish_reasons", list(response.finish_reasons))
        if response.verdict is not None:  # the provider's own cache verdict (`diagnose`)
            span.set_attribute("warmloop.cache.provider_verdict", response.verdict.reason)
        if self.tracing.capture:
            span.set_attribute("gen_ai.output.messages", output_messages(response))


def output_messages(response: ModelResponse) -> str:
    """The reply as `gen_ai.output.messages` (the conventions' JSON: one assistant message
    whose parts are its text and tool calls)."""
    turn = response.turn
    parts: list[dict[str, object]] = [{"type": "text", "content": turn.text}] if turn.text else []
    parts += [
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        for call in turn.tool_calls
    ]
    message: dict[str, object] = {"role": "assistant", "parts": parts}
    if response.finish_reasons:
        message["finish_reason"] = response.finish_reasons[0]
    return json.dumps([message], ensure_ascii=False)


def content_captured(explicit: bool | None = None) -> bool:
    """Whether message content goes into spans: `explicit` when given, else the
    conventions' switch `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (or 1,
    yes: the proxy's bust events read the same switch); off by
    default, since prompts and tool results may hold what must not leave the process."""
    if explicit is not None:
        return explicit
    return os.environ.get(CAPTURE_VARIABLE, "").strip().lower() in {"true", "1", "yes"}


def instrument(
    model: Model | str, *, tracer: Tracer | None = None, capture_content: bool | None = None
) -> InstrumentedModel:
    """`model` (a `Model`, or any selection string, resolved as `Agent` resolves one),
    sending every request inside an OpenTelemetry GenAI span; an agent on it traces each
    run and tool call too. `tracer` defaults to the global tracer provider's `warmloop`
    tracer. `capture_content=True` (or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=
    true`) puts the model's replies and the tool calls' arguments and results into the
    spans; off by default."""
    if isinstance(model, str):
        model = model_named(model)
    if not isinstance(model, Model):
        raise ConfigurationError(f"instrument needs a warmloop Model, got {model!r}")
    if capture_content is not None and not isinstance(capture_content, bool):
        raise ConfigurationError(
            f"capture_content must be True, False or None, got {capture_content!r}"
        )
    trace = opentelemetry_trace()
    captured = content_captured(capture_content)
    return InstrumentedModel(model, tracer or trace.get_tracer(TRACER_NAME), captured)
