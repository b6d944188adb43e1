"""The answer as it streams: the `submit` call's argument deltas parsed as they arrive (a
cut-short string kept as far as it came), so a reader sees the outputs grow instead of raw
JSON fragments; `PartialOutput` events beside the deltas they come from."""

from __future__ import annotations

from collections.abc import Callable

import pydantic_core
from pydantic import BaseModel, ValidationError

from warmloop.agent.events import Event, PartialOutput
from warmloop.messages import JsonData
from warmloop.outputs import Outputs, SubmittedOutputs, submitted
from warmloop.providers.deltas import Delta, ToolCallDelta
from warmloop.tools.gateway import SUBMIT


class PartialOutputs:
    """One request's deltas, told to `emit` as they come, each piece of a `submit` call
    followed by the outputs parsed so far when they changed."""

    def __init__(self, outputs: Outputs, emit: Callable[[Event], None]) -> None:
        self.outputs = outputs
        self.emit = emit
        self.submits: dict[int, str] = {}
        """The raw arguments so far of each `submit` call of the turn, by its index."""
        self.names: dict[int, str] = {}
        self.last: JsonData = None

    def __call__(self, delta: Delta) -> None:
        self.emit(delta)
        if not isinstance(delta, ToolCallDelta):
            return
        if delta.name:
            self.names[delta.index] = delta.name
        if self.names.get(delta.index) != SUBMIT:
            return
        raw = self.submits.get(delta.index, "") + delta.arguments
        self.submits[delta.index] = raw
        arguments = partial_object(raw)
        if arguments is None or arguments == self.last:
            return
        self.last = arguments
        field = self.outputs.text_field
        text = arguments.get(field) if field is not None else None
        self.emit(
            PartialOutput(
                arguments,
                validated(self.outputs.model, arguments),
                text if isinstance(text, str) else None,
            )
        )


def partial_object(raw: str) -> dict[str, JsonData] | None:
    """The JSON object `raw` begins, as far as it goes (its last string cut where it
    stops); None before its first key or when it is no object."""
    try:
        value = pydantic_core.from_json(raw, allow_partial="trailing-strings")
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def validated(model: type[BaseModel], arguments: dict[str, JsonData]) -> SubmittedOutputs | None:
    """`arguments` as the outputs model, once every required field has begun; None before."""
    try:
        return submitted(model.model_validate(arguments))
    except ValidationError:
        return None
