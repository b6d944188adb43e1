"""What every provider is: a pure `render` to wire form and an I/O `send` that parses the reply."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, JsonValue
from warmloop.protocols import react_text
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.stream import WireStream
from warmloop.wire.verdict import ProviderVerdict


@dataclass(frozen=True, eq=False)
class Rendered:
    """A rendered request: the payload `send` puts on the wire, and how to derive its
    canonical stream from that payload (`wire`, computed on first use)."""

    payload: Any
    derive: Callable[[Any], WireStream] = field(repr=False)
    turn_index: int = 0
    wire_format: str = ""
    """The wire format's name (`WireLayout.name`: `anthropic`, `openai-chat`, ...)."""
    keepalive: bool = False
    """A keep-alive (`keepalive.ping`): the previous request, a minimal answer."""

    @cached_property
    def wire(self) -> WireStream:
        """The payload's canonical stream: what the prefix guard compares."""
        return self.derive(self.payload)

    @property
    def stream(self) -> str:
        """The canonical stream as one string."""
        return self.wire.text

    @property
    def length(self) -> int:
        """Length of the stream, without joining it."""
        return self.wire.length

    def __eq__(self, other: object) -> bool:
        """Same payload, same stream, same turn: renders that cannot be told apart."""
        if not isinstance(other, Rendered):
            return NotImplemented
        mine = (self.payload, self.turn_index, self.stream)
        return mine == (other.payload, other.turn_index, other.stream)

    __hash__ = None  # type: ignore[assignment]  # holds a mutable payload


@dataclass(frozen=True)
class FormatProblem:
    """A model turn the protocol could not parse: what was wrong, and the user turn that
    tells the model how to write it (the protocol's words, never the loop's)."""

    detail: str
    correction: str


@dataclass(frozen=True)
class ModelResponse:
    """A parsed reply. `format_error` is set when the turn could not be parsed (text protocol)."""

    turn: AssistantTurn
    usage: Usage
    format_error: FormatProblem | None = None
    verdict: ProviderVerdict | None = None
    """The provider's own cache verdict, when the model asked for one (`diagnose=True`)."""
    response_id: str = ""
    """The provider's id of the reply ("" where it gives none): telemetry's
    `gen_ai.response.id`."""
    finish_reasons: tuple[str, ...] = ()
    """Why the reply ended, as the provider says it (`end_turn`, `tool_calls`, `STOP`, ...)."""


class KnownFacts:
    """For models whose facts are settled when they are built: nothing to discover."""

    facts: ModelFacts

    async def discover(self) -> ModelFacts:
        """The facts as they stand: this model has nothing more to ask."""
        return self.facts


class WrappedModel:
    """A model around another (tracing, recording, ...): name, facts, discovery, render and
    send are the wrapped model's, so the wrapper is planned exactly as the model it wraps;
    a subclass overrides only what it adds."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name

    @property
    def facts(self) -> ModelFacts:
        """The wrapped model's facts."""
        return self.model.facts

    async def discover(self) -> ModelFacts:
        """The wrapped model's discovery."""
        return await self.model.discover()

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """The wrapped model's render, unchanged (pure)."""
        return self.model.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Sent by the wrapped model."""
        return await self.model.send(rendered, session_id=session_id)


def text_protocol_reply(
    text: str, turn_index: int, usage: Usage, details: dict[str, JsonValue] | None = None
) -> ModelResponse:
    """A text-protocol reply: the parsed turn, or the raw text kept as the turn with the
    protocol's own correction when it does not parse (the loop appends it)."""
    try:
        turn = react_text.parse(text, turn_index)
    except react_text.ParseFailure as exc:
        problem = FormatProblem(str(exc), react_text.correction(str(exc)))
        raw = AssistantTurn(text=text, provider_details=details or {})
        return ModelResponse(raw, usage, problem)
    return ModelResponse(replace(turn, provider_details=details or {}), usage)


class TranscriptRenderer(Protocol):
    """What renders a transcript to one wire format's payload (`WireFormat.renderer`)."""

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered: ...


@runtime_checkable
class Model(Protocol):
    """A model: renders transcripts for its wire format and sends them, and carries the
    facts cost decisions rest on (`facts`: window, cache rules, prices, each with its
    source). A model that wraps another forwards `facts` and `discover` to it."""

    name: str

    @property
    def facts(self) -> ModelFacts:
        """What is known about the model now (told, discovered, from the table, assumed)."""
        ...

    async def discover(self) -> ModelFacts:
        """Ask the server for what it publishes about the model (once; later calls return
        the facts as they stand); never raises for what the server does."""
        ...

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        ...

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send one rendered request; raises ProviderError for failures that are final.
        `session_id` is the conversation's routing key, sent where the host reads it
        (`routing`: `prompt_cache_key`, a session header, or nowhere)."""
        ...
