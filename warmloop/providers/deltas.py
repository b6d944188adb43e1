"""What a streamed request yields as it arrives, and the models that stream.

A model that streams (`StreamingModel`) answers `stream(...)` with the same
`ModelResponse` as `send`, from a request body that differs only in the provider's stream
flag, and hands each piece of text and of a tool call to `deltas` as it is read. A model
without `stream` is sent as usual: the run has no deltas then, and loses nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from warmloop.providers.base import Model, ModelResponse, Rendered


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's text, in the order the provider streamed it."""

    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a tool call: `index` is the call's place in the turn; `name` and
    `call_id` come with its first piece (empty after), `arguments` is the next stretch of
    its raw JSON arguments."""

    index: int
    name: str = ""
    call_id: str = ""
    arguments: str = ""


Delta = TextDelta | ToolCallDelta
"""One piece of a streamed reply."""


@runtime_checkable
class StreamingModel(Model, Protocol):
    """A model that can stream its reply (see the module docstring)."""

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """`send`, streamed: each delta to `deltas` as it arrives, the whole reply at the
        end (its usage read from the stream's own usage event)."""
        ...


async def stream_or_send(
    model: Model, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
) -> ModelResponse:
    """`model`'s answer to `rendered`, streamed to `deltas` where the model streams, else
    sent (no deltas then): what a model wrapping another streams with."""
    if isinstance(model, StreamingModel):
        return await model.stream(rendered, session_id=session_id, deltas=deltas)
    return await model.send(rendered, session_id=session_id)
