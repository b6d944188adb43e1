"""The events of a run, in the order they happen: what `agent.iter` yields and what
`on_event` is called with. `on_message` and `on_maintenance` are views of the same events
(`MessageAppended`, `Maintained` and `KeptAlive`).

Each event is a frozen dataclass; `Event` is their union, so a `match` over it is checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.agent.result import Run
from warmloop.facts.usage import Usage
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.messages import JsonData, Message, ToolCall, ToolResult
from warmloop.outputs import SubmittedOutputs
from warmloop.providers.deltas import TextDelta, ToolCallDelta
from warmloop.wire.guard import Bust
from warmloop.wire.miss_kinds import Miss
from warmloop.wire.request_record import RequestRecord


@dataclass(frozen=True)
class RequestSent:
    """Request `request` (1 for the run's first) went to the model."""

    request: int


@dataclass(frozen=True)
class RequestAnswered:
    """Request `request` was answered: its record holds the usage and cache figures, the
    seconds it took and the guard's check."""

    request: int
    record: RequestRecord

    @property
    def usage(self) -> Usage:
        """What the provider reported for the request (cache read and write included)."""
        return self.record.usage


@dataclass(frozen=True)
class CacheBust:
    """The guard's verdict before request `request`: it does not extend the previous
    one, from `bust.position` on (the likely cause in `bust`)."""

    request: int
    bust: Bust


@dataclass(frozen=True)
class CacheMiss:
    """The guard's verdict after request `request` was answered: its prefix held, yet it
    read less than the request before it left; `miss.kind` says why (idle past the TTL,
    evicted inside it, below the minimum, routed elsewhere, a write not yet landed, a TTL
    tier switched, or the provider's own verdict: `wire.miss_kinds`)."""

    request: int
    miss: Miss


@dataclass(frozen=True)
class MessageAppended:
    """A message joined the transcript (what `on_message` is called with)."""

    message: Message


@dataclass(frozen=True)
class ToolStarted:
    """A tool call began to run."""

    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    """A tool call ended with `result` (an error result when it failed)."""

    call: ToolCall
    result: ToolResult


@dataclass(frozen=True)
class Maintained:
    """The conversation was rewritten (a prune, a fold, a cut)."""

    event: MaintenanceEvent


@dataclass(frozen=True)
class KeptAlive:
    """A keep-alive request refreshed the cache during a pause."""

    event: MaintenanceEvent


@dataclass(frozen=True)
class PartialOutput:
    """The outputs as far as the `submit` call's arguments have streamed: `arguments` the
    JSON object parsed so far (its last string perhaps cut short), `outputs` the outputs
    model once every required field has begun (None before), and `text` the answer so
    far where the output is text (`answer: str`, `outputs=str`). Each follows the
    `ToolCallDelta` it was parsed from; the run's outputs are `FinalOutput`'s."""

    arguments: dict[str, JsonData]
    outputs: SubmittedOutputs | None = None
    text: str | None = None


@dataclass(frozen=True)
class FinalOutput:
    """The run ended with validated outputs; `run` is the finished run."""

    outputs: SubmittedOutputs
    run: Run


Event = (
    RequestSent
    | RequestAnswered
    | CacheBust
    | CacheMiss
    | TextDelta
    | ToolCallDelta
    | PartialOutput
    | MessageAppended
    | ToolStarted
    | ToolFinished
    | Maintained
    | KeptAlive
    | FinalOutput
)
"""Every event a run reports."""


def maintenance_event(event: MaintenanceEvent) -> Maintained | KeptAlive:
    """A maintenance action as its event: a keep-alive, or a rewrite."""
    return KeptAlive(event) if event.kind == "keepalive" else Maintained(event)
