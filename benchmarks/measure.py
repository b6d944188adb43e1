"""Price each loop's requests under each provider's cache simulator, and measure how much of
the physical limit it reused.

A request is split into its canonical wire pieces (request parameters, tools, then each
message), about four characters a token. Explicit-breakpoint providers get the markers a
careful client places for every loop alike: on the last block and on the last block shared
with the previous request. `cached/limit` replays the requests through an engine that keeps
exactly the previous request (the `local` profile): what a loop could reuse at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise

from benchmarks.scenarios import Request
from warmloop.audit.blocks import ideal_marks
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.providers.openai.record import CHAT
from warmloop.simulate import Block, SimRequest, blocks_from_texts, simulate
from warmloop.wire.stream import canonical_stream

PROVIDERS = (
    "anthropic:claude-sonnet-4-6",
    "openai:gpt-5",
    "gemini:gemini-2.5-flash",
    "deepseek:deepseek-flash",
)
"""The providers every figure is priced under (the audit's references, in this order)."""
ENGINE = "local"


@dataclass(frozen=True)
class LoopResult:
    """One loop on one scenario: its size, its reuse and its dollars per provider."""

    scenario: str
    loop: str
    requests: int
    prompt_tokens: int
    cached: int
    limit: int
    dollars: dict[str, float]
    cumulative: dict[str, list[float]]

    @property
    def cached_over_limit(self) -> float:
        """Reused tokens against what the previous requests made reusable (1.0 = the limit)."""
        return self.cached / self.limit if self.limit else 1.0


def pieces(request: Request) -> list[str]:
    """The request's canonical wire pieces, in prompt order."""
    stream = canonical_stream(request.payload, CHAT)
    return [f"{label}|{text}" for label, text in stream.head] + list(stream.items)


def sim_requests(requests: Sequence[Request], profile: CacheProfile) -> list[SimRequest]:
    """Timestamped block sequences with a careful client's markers."""
    out: list[SimRequest] = []
    before: list[str] = []
    for request in requests:
        texts = pieces(request)
        common = 0
        for a, b in zip(texts, before, strict=False):
            if a != b:
                break
            common += 1
        marks = ideal_marks(len(texts), common, profile.ttl)
        points = {i: mark for i, mark in enumerate(marks) if mark is not None}
        blocks: tuple[Block, ...] = blocks_from_texts(texts, breakpoints=points)
        out.append(SimRequest(request.at, blocks, request.output_tokens))
        before = texts
    return out


def measure(scenario: str, loop: str, requests: Mapping[str, Sequence[Request]]) -> LoopResult:
    """Each provider's requests priced under its rules; size and reuse from the first
    provider's (warmloop's planner may send different requests per provider: reuse is the
    lowest of them)."""
    reference = requests[PROVIDERS[0]]
    reuse = [_reuse(sent) for sent in requests.values()]
    cached, limit = min(reuse, key=lambda pair: pair[0] / pair[1] if pair[1] else 1.0)
    dollars: dict[str, float] = {}
    cumulative: dict[str, list[float]] = {}
    for spec in PROVIDERS:
        prices = prices_for(spec)
        if prices is None:
            continue
        profile = profile_for(spec)
        outcomes = simulate(sim_requests(requests[spec], profile), profile)
        per_request = [cost_breakdown(o.usage, prices).total for o in outcomes]
        cumulative[spec] = list(accumulate(per_request))
        dollars[spec] = cumulative[spec][-1] if per_request else 0.0
    size = sum(tokens for tokens in _sizes(reference))
    return LoopResult(scenario, loop, len(reference), size, cached, limit, dollars, cumulative)


def _sizes(requests: Sequence[Request]) -> list[int]:
    engine = simulate(sim_requests(requests, profile_for(ENGINE)), profile_for(ENGINE))
    return [outcome.usage.prompt_tokens for outcome in engine]


def _reuse(requests: Sequence[Request]) -> tuple[int, int]:
    """(tokens reused from the previous request, what the previous requests allowed)."""
    engine = simulate(sim_requests(requests, profile_for(ENGINE)), profile_for(ENGINE))
    sizes = [outcome.usage.prompt_tokens for outcome in engine]
    limit = sum(min(a, b) for a, b in pairwise(sizes))
    return sum(outcome.usage.cache_read_tokens for outcome in engine[1:]), limit
