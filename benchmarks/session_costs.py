"""Shared by the session benchmarks: a conversation as it stood at each request, rendered on
a provider's real wire format and priced under that provider's cache rules.

A request is rendered by the provider's own renderer (offline, nothing is sent), its
canonical stream cut into blocks (one per head piece and conversation item; about four
characters a token), explicit breakpoints taken from the payload's own `cache_control`
markers, and the sequence replayed through `simulate` with the dated prices.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anthropic
from openai import AsyncOpenAI

from warmloop import ScriptedModel, ToolSpec, Transcript
from warmloop.facts.price_table import Prices, prices_for
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.anthropic.record import LAYOUT as ANTHROPIC
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.openai.chat_format import ChatRenderer
from warmloop.providers.openai.record import CHAT, RESPONSES
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.scripted import Script
from warmloop.simulate import Block, SimOutcome, SimRequest, simulate
from warmloop.transcript import scratch_copy
from warmloop.wire.stream import WireLayout, canonical_stream

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Rules:
    """One provider's wire format, cache profile and prices."""

    name: str
    spec: str
    layout: WireLayout

    @property
    def profile(self) -> CacheProfile:
        return profile_for(self.spec)

    @property
    def prices(self) -> Prices:
        found = prices_for(self.spec)
        assert found is not None, self.spec
        return found

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The payload this provider's renderer builds (a fresh renderer: no memo)."""
        name = self.spec.split(":", 1)[1]
        if self.layout is ANTHROPIC:
            model: Any = AnthropicModel(name, client=_ANTHROPIC)
        elif self.layout is CHAT:
            model = ChatRenderer(name)
        else:
            model = OpenAIResponsesModel(name, client=_OPENAI)
        payload: dict[str, Any] = model.render(transcript, tools).payload
        return payload


_ANTHROPIC = anthropic.AsyncAnthropic(api_key="offline")
_OPENAI = AsyncOpenAI(api_key="offline")
ANTHROPIC_RULES = Rules("Anthropic (Sonnet 4.6, 5m)", "anthropic:claude-sonnet-4-6", ANTHROPIC)
OPENAI_RULES = Rules("OpenAI (GPT-5)", "openai:gpt-5", RESPONSES)
DEEPSEEK_RULES = Rules("DeepSeek (deepseek-chat)", "deepseek:deepseek-chat", CHAT)
RULES = (ANTHROPIC_RULES, OPENAI_RULES)


class RecordingModel(ScriptedModel):
    """A scripted model that keeps the transcript of every request it was sent."""

    def __init__(
        self, replies: Sequence[Script], *, name: str, context_window: int | None = None
    ) -> None:
        super().__init__(replies, name=name, context_window=context_window)
        self._sources: dict[int, Transcript] = {}
        self.sent: list[Transcript] = []

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        rendered = super().render(transcript, tools)
        self._sources[id(rendered)] = scratch_copy(transcript)
        return rendered

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        self.sent.append(self._sources.pop(id(rendered)))
        return await super().send(rendered, session_id=session_id)


def _marked(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(_marked(v) for v in value.values())
    if isinstance(value, list):
        return any(_marked(v) for v in value)
    return False


_KEYS: dict[str, str] = {}


def _key(text: str) -> str:
    found = _KEYS.get(text)
    if found is None:
        found = _KEYS[text] = hashlib.sha256(text.encode()).hexdigest()
    return found


def blocks(payload: dict[str, Any], rules: Rules) -> tuple[Block, ...]:
    """The payload's canonical stream as blocks, breakpoints where the payload has them."""
    stream = canonical_stream(payload, rules.layout)
    marks: list[bool] = []
    for label, _ in stream.head:
        value = payload.get(label) if label != "request" else None
        marks.append(rules.layout is ANTHROPIC and _marked(value))
    conversation = payload[rules.layout.conversation[0]]
    marks += [rules.layout is ANTHROPIC and _marked(item) for item in conversation]
    texts = [text for _, text in stream.head] + list(stream.items)
    return tuple(
        Block(math.ceil(len(text) / CHARS_PER_TOKEN), _key(text), "5m" if mark else None)
        for text, mark in zip(texts, marks, strict=True)
    )


def price(
    snapshots: Sequence[tuple[float, Transcript]],
    tools: Sequence[ToolSpec],
    rules: Rules,
    output_tokens: int = 100,
) -> list[SimOutcome]:
    """Each request (time, transcript as sent) replayed under `rules`."""
    requests = [
        SimRequest(at, blocks(rules.render(t, tools), rules), output_tokens) for at, t in snapshots
    ]
    return simulate(requests, rules.profile, rules.prices)


def dollars(outcomes: Sequence[SimOutcome]) -> float:
    return sum(o.cost.total for o in outcomes if o.cost is not None)
