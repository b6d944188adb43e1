"""Price each loop's requests under each provider's cache simulator, and measure how much of
the physical limit it reused.

A request is split into its canonical wire pieces (request parameters, tools, then each
message), about four characters a token. Explicit-breakpoint providers get the markers a
careful client places for every loop alike: on the last block and on the last block shared
with the previous request. `cached/limit` replays the requests through an engine that keeps
exactly the previous request (the `local` profile): what a loop could reuse at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise

from benchmarks.scenarios import Request
from warmloop.audit.blocks import ideal_marks
from warmloop.audit.costs import DEFAULT_PROVIDERS
from warmloop.cache.pricing import cost_breakdown, prices_for
from warmloop.cache.profiles import CacheProfile, profile_for
from warmloop.cache.simulate import Block, SimRequest, blocks_from_texts, simulate
from warmloop.cache.wire import CHAT, canonical_stream

PROVIDERS = DEFAULT_PROVIDERS
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


def measure(scenario: str, loop: str, requests: Sequence[Request]) -> LoopResult:
    """The loop's requests, reuse against the limit, and dollars under every provider."""
    engine = simulate(sim_requests(requests, profile_for(ENGINE)), profile_for(ENGINE))
    sizes = [outcome.usage.prompt_tokens for outcome in engine]
    limit = sum(min(a, b) for a, b in pairwise(sizes))
    cached = sum(outcome.usage.cache_read_tokens for outcome in engine[1:])
    dollars: dict[str, float] = {}
    cumulative: dict[str, list[float]] = {}
    for spec in PROVIDERS:
        prices = prices_for(spec)
        if prices is None:
            continue
        profile = profile_for(spec)
        outcomes = simulate(sim_requests(requests, profile), profile)
        per_request = [cost_breakdown(o.usage, prices).total for o in outcomes]
        cumulative[spec] = list(accumulate(per_request))
        dollars[spec] = cumulative[spec][-1] if per_request else 0.0
    return LoopResult(scenario, loop, len(requests), sum(sizes), cached, limit, dollars, cumulative)
