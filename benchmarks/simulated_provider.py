"""A provider simulated for benchmarks of whole agents: each request is rendered by the real
provider's renderer (Anthropic Messages, OpenAI Responses), answered by a script over the
conversation it was rendered from, and billed with the usage the cache simulator
(`warmloop.simulate`) gives it at the loop's clock (run on virtual time:
`benchmarks.virtual_time`), under the provider's cache rules and dated prices.

A request's blocks are its pieces as the provider caches them: each tool, each system
block and each message's content block on Anthropic, with the TTL of the breakpoint a piece
carries (`cache_control`, "5m" unless `ttl` says otherwise); each tool and input item on
Responses, automatically cached for the retention the request asks for
(`prompt_cache_options.ttl`), with an entry also where an item carries an explicit
`prompt_cache_breakpoint` (GPT-5.6 and later). Where a provider routes by key (OpenAI's
`prompt_cache_key`) a request reaches one of `machines` caches, by a hash of its key; Anthropic
documents no routing, so it is one cache. A keep-alive is billed like any request and
answers with an empty turn. Every request, keep-alive or not, is logged (`Sent`), so a
benchmark can price the same stream again under other choices (an offline optimum).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from warmloop import AssistantTurn, Model, ToolSpec, Transcript
from warmloop.facts.price_table import Prices, prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import CacheProfile
from warmloop.facts.usage import Usage
from warmloop.providers.base import ModelResponse, Rendered, WrappedModel
from warmloop.simulate import Block, CacheSimulator, SimRequest

CHARS_PER_TOKEN = 4
Script = Callable[[Transcript, int], AssistantTurn]
"""The reply to a request: from the conversation it was rendered from, and its turn index
(for call ids)."""


@dataclass(frozen=True)
class Sent:
    """One request as the provider saw it: who sent it, when, to which cache, what it was
    (blocks, output, retention) and what it was billed."""

    agent: str
    conversation: str
    keepalive: bool
    at: float
    machine: int
    request: SimRequest
    usage: Usage
    dollars: float


@dataclass
class Provider:
    """The simulated provider: its rules, its caches and the log of what it was sent."""

    spec: str
    profile: CacheProfile
    machines: int = 1
    latency: float = 6.0
    """Seconds from a request to its answer (the write is visible at once)."""
    caches: dict[int, CacheSimulator] = field(default_factory=dict)
    log: list[Sent] = field(default_factory=list)

    @property
    def prices(self) -> Prices:
        found = prices_for(self.spec)
        assert found is not None, self.spec
        return found

    def machine(self, key: str) -> int:
        """Where a request routed on `key` is served."""
        if self.machines == 1:
            return 0
        return int(hashlib.sha256(key.encode()).hexdigest(), 16) % self.machines

    def bill(self, agent: str, conversation: str, key: str, rendered: Rendered) -> Usage:
        """The usage of `rendered` sent now on `key`, logged."""
        now = asyncio.get_running_loop().time()
        answer = (
            0 if rendered.keepalive and self.profile.prewarm else 1 if rendered.keepalive else 60
        )
        request = SimRequest(now, blocks(rendered.payload), answer, retention(rendered.payload))
        machine = self.machine(key)
        cache = self.caches.setdefault(machine, CacheSimulator(self.profile))
        usage = cache.request(request)
        dollars = cost_breakdown(usage, self.prices).total
        sent = Sent(agent, conversation, rendered.keepalive, now, machine, request, usage, dollars)
        self.log.append(sent)
        return usage

    def dollars(self) -> float:
        return sum(s.dollars for s in self.log)


class SimulatedModel(WrappedModel):
    """A real renderer's model, sent to the simulated provider and answered by `script`."""

    def __init__(self, renderer: Model, provider: Provider, agent: str, script: Script) -> None:
        super().__init__(renderer)
        self.provider = provider
        self.agent = agent
        self.script = script
        self._sources: dict[str, Transcript] = {}

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        rendered = self.model.render(transcript, tools)
        # By its canonical stream: a request written for a longer TTL, or repeated as a
        # keep-alive, is a copy of the rendered one whose stream is the same text.
        self._sources[rendered.stream] = transcript
        return rendered

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        source = self._sources.get(rendered.stream)
        conversation = source.id if source is not None else ""
        usage = self.provider.bill(self.agent, conversation, session_id, rendered)
        await asyncio.sleep(self.provider.latency)
        if rendered.keepalive or source is None:
            return ModelResponse(AssistantTurn(), usage)
        del self._sources[rendered.stream]
        return ModelResponse(self.script(source, rendered.turn_index), usage)


def _key(piece: Any) -> str:
    text = json.dumps(piece, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _tokens(piece: Any) -> int:
    return math.ceil(len(json.dumps(piece, sort_keys=True)) / CHARS_PER_TOKEN)


def blocks(payload: dict[str, Any]) -> tuple[Block, ...]:
    """The request's pieces as the provider caches them (see the module docstring)."""
    if "messages" in payload:  # Anthropic Messages
        system = payload.get("system") or []
        pieces: list[dict[str, Any]] = [*payload.get("tools", [])]
        pieces += [{"type": "text", "text": system}] if isinstance(system, str) else system
        for message in payload["messages"]:
            content = message["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            pieces += [{"role": message["role"], **block} for block in content]
        found = []
        for piece in pieces:
            marker = piece.get("cache_control")
            bare = {k: v for k, v in piece.items() if k != "cache_control"}
            ttl = marker.get("ttl", "5m") if isinstance(marker, dict) else None
            found.append(Block(_tokens(bare), _key(bare), ttl))
        return tuple(found)
    items = [*payload.get("tools", []), *payload.get("input", [])]
    return tuple(Block(_tokens(item), _key(item), _marked(item)) for item in items)


def _marked(item: Any) -> str | None:
    """ "explicit" for a Responses item carrying a `prompt_cache_breakpoint` (GPT-5.6 and
    later write an entry there: the end of the opening), else None."""
    return "explicit" if "prompt_cache_breakpoint" in json.dumps(item) else None


def retention(payload: dict[str, Any]) -> str | None:
    """The retention an automatically cached request asks for (None: the model's)."""
    options = payload.get("prompt_cache_options")
    ttl = options.get("ttl") if isinstance(options, dict) else None
    return ttl if isinstance(ttl, str) else None
