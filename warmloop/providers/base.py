"""What every provider is: a pure `render` to wire form and an I/O `send` that parses the reply."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from warmloop.cache.guard import Section
from warmloop.cache.usage import Usage
from warmloop.tools import ToolSpec
from warmloop.transcript import AssistantTurn, Transcript


def dumps(value: object) -> str:
    """Deterministic compact wire JSON for every renderer (key order kept, UTF-8 kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Rendered:
    """A rendered request: the payload `send` puts on the wire, and its prefix stream.

    The stream is the payload's prompt in order, cache markers removed and routing keys
    left out, so that an append-only session makes each stream a prefix of the next.
    """

    payload: Any
    sections: tuple[Section, ...]
    turn_index: int = 0
    size: int = field(default=-1, compare=False, repr=False)
    """The stream's length when the renderer tracks it (saves an O(n) join a step)."""

    @cached_property
    def stream(self) -> str:
        return "".join(s.text for s in self.sections)

    @cached_property
    def length(self) -> int:
        """Length of the stream, without joining it when the renderer knows it."""
        return self.size if self.size >= 0 else len(self.stream)


@dataclass(frozen=True)
class ModelResponse:
    """A parsed reply. `format_error` is set when the turn could not be parsed (text protocol)."""

    turn: AssistantTurn
    usage: Usage
    format_error: str | None = None


@runtime_checkable
class Model(Protocol):
    """A model: renders transcripts for its wire format and sends them."""

    name: str

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        ...

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send one rendered request; raises ProviderError for failures that are final."""
        ...
