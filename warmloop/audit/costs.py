"""What a conversation's input costs under each provider's cache rules, against a perfect prefix.

Each conversation is replayed through its own simulated cache (`simulate`) under a
provider's profile and priced with its dated table (`facts.pricing`), twice:
- as logged: the blocks each request really sent, at the times it sent them; explicit
  markers where the log has them (Anthropic), else where a careful client puts them;
- perfect: each request is the one it continues plus its new tokens and finds the cache warm
  (idle gaps shortened below the TTL), with the same prompt sizes.
What a request with a cause cost above its perfect replay is charged to that cause (see
`charged`), so the dollars lost are never negative, no cause without requests carries any,
and the causes add up to the dollars lost: the perfect-prefix dollars are those as logged
less the dollars lost. A request whose miss the provider's own diagnostics say it
caused (`provider-lost`) is replayed on a cache that lost everything, and its cost is
charged to the provider, apart from the client's causes; so is a miss the cache rules
cannot replay but the log shows (evicted, routed, a write not yet landed, a TTL switched:
`wire.miss_kinds.LOGGED_MISSES`), charged to its kind.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from warmloop.audit.analysis import Finding, request_times
from warmloop.audit.blocks import conversation_pieces, ideal_marks, sized
from warmloop.errors import ConfigurationError
from warmloop.exchange.grouping import Conversation
from warmloop.facts.price_table import Prices, prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.facts.usage import Usage
from warmloop.providers.registry import providers
from warmloop.simulate import Block, CacheSimulator, SimRequest
from warmloop.wire.miss_kinds import LOGGED_MISSES, OPENING_REWRITTEN
from warmloop.wire.pieces import Pieces


def default_providers() -> tuple[str, ...]:
    """The models every audit prices a log under, besides the model the log used: each
    provider record's `audit_reference`, in the order the providers are registered."""
    return tuple(p.audit_reference for p in providers() if p.audit_reference)


@dataclass(frozen=True)
class ProviderCost:
    """A conversation's input dollars under one provider: as logged, perfect, and the gap
    charged to each cause (`per_request` pairs are as-logged and perfect dollars)."""

    provider: str
    actual: float
    perfect: float
    lost_by_cause: dict[str, float]
    per_request: tuple[tuple[float, float], ...]

    @property
    def lost(self) -> float:
        """Dollars above the perfect prefix."""
        return self.actual - self.perfect


def input_dollars(usage: Usage, prices: Prices) -> float:
    """A request's input cost: uncached input, cache reads and cache writes."""
    cost = cost_breakdown(usage, prices)
    return cost.input + cost.cache_read + cost.cache_write


def _replay(simulator: CacheSimulator, request: SimRequest, fallback: SimRequest) -> Usage:
    try:
        return simulator.request(request)
    except ConfigurationError:  # markers the API would refuse: price a careful client's
        return simulator.request(fallback)


def _logged_requests(
    conversation: Conversation, sizes: Sequence[int], profile: CacheProfile
) -> list[tuple[SimRequest, SimRequest]]:
    """Per request: as sent, and the same with a careful client's markers."""
    keep_marks = conversation.wire.explicit_breakpoints
    out: list[tuple[SimRequest, SimRequest]] = []
    seen: list[Pieces] = []
    sent: list[tuple[Block, ...]] = []
    for found, parent, tokens, at in zip(
        conversation_pieces(conversation, cut=profile.mode != "explicit"),
        conversation.parents,
        sizes,
        request_times(conversation.entries),
        strict=True,
    ):
        common = seen[parent].common(found) if parent is not None else 0
        ideal = ideal_marks(len(found.texts), common, profile.ttl)
        marks = found.marks if keep_marks else ideal
        before = sent[parent] if parent is not None else ()
        blocks = sized(found.texts, tokens, marks, before, common)
        seen.append(found)
        sent.append(blocks)
        out.append(
            (
                SimRequest(at, blocks),
                SimRequest(
                    at, tuple(replace(b, breakpoint=m) for b, m in zip(blocks, ideal, strict=True))
                ),
            )
        )
    return out


def _perfect_requests(
    times: Sequence[float],
    sizes: Sequence[int],
    parents: Sequence[int | None],
    profile: CacheProfile,
) -> list[SimRequest]:
    """Each request as its parent's blocks plus its new tokens, every gap kept warm. A
    request shorter than its parent (a sliding window) reads as much of it as the cache
    serves: under automatic caching the parent's new tokens are cut where the shorter one's
    readable prefix ends, so the simulator can serve it."""
    out: list[SimRequest] = []
    warm = min(profile.ttl_seconds / 2, 60.0)
    at = times[0] if times else 0.0
    cuts = sorted(
        {
            profile.cacheable(sizes[k])
            for k, parent in enumerate(parents)
            if parent is not None and sizes[k] < sizes[parent] and profile.mode != "explicit"
        }
        - {0}
    )
    for k, (tokens, parent) in enumerate(zip(sizes, parents, strict=True)):
        if k:
            at += min(times[k] - times[k - 1], warm)
        blocks = out[parent].blocks if parent is not None else ()
        kept, used = [], 0
        for block in blocks:
            if used + block.tokens > tokens:
                break
            kept.append(block)
            used += block.tokens
        ends_previous = len(kept) - 1
        start = used
        for cut in cuts[bisect_right(cuts, used) : bisect_left(cuts, tokens)]:
            kept.append(Block(cut - start, f"new {k} from {start}"))
            start = cut
        if tokens > start:
            kept.append(Block(tokens - start, f"new {k} from {start}"))
        marks = {len(kept) - 1, ends_previous} if ends_previous >= 0 else {len(kept) - 1}
        out.append(
            SimRequest(
                at,
                tuple(
                    Block(b.tokens, b.key, profile.ttl if i in marks else None)
                    for i, b in enumerate(kept)
                ),
            )
        )
    return out


def provider_cost(
    conversation: Conversation, findings: Sequence[Finding], spec: str
) -> ProviderCost | None:
    """The conversation under `spec`'s rules and prices (None when it has no price)."""
    prices = prices_for(spec)
    if prices is None:
        return None
    profile = profile_for(spec)
    sizes = [finding.prompt_tokens for finding in findings]
    logged = CacheSimulator(profile)
    perfect = CacheSimulator(profile)
    pairs: list[tuple[float, float]] = []
    perfect_requests = _perfect_requests(
        request_times(conversation.entries), sizes, conversation.parents, profile
    )
    requests = _logged_requests(conversation, sizes, profile)
    for finding, (request, fallback), ideal in zip(
        findings, requests, perfect_requests, strict=True
    ):
        if finding.cause_kind in LOGGED_MISSES:  # the log shows a miss the rules cannot
            logged = CacheSimulator(profile)
        actual = input_dollars(_replay(logged, request, fallback), prices)
        best = input_dollars(perfect.request(ideal), prices)
        if finding.cause_kind == OPENING_REWRITTEN:  # it could have read what it wrote
            best = min(best, actual - opening_saving(finding.reusable, prices))
        pairs.append((actual, best))
    actual_total = sum(a for a, _ in pairs)
    lost = charged(findings, pairs, max(actual_total - sum(b for _, b in pairs), 0.0))
    return ProviderCost(
        spec,
        actual_total,
        actual_total - sum(lost.values()),
        dict(sorted(lost.items(), key=lambda item: -item[1])),
        tuple(pairs),
    )


def opening_saving(tokens: int, prices: Prices) -> float:
    """What reading a shared opening of `tokens` saves over writing it again (a write where
    writes are billed, else uncached input: `Rates.cache_write`)."""
    return input_dollars(Usage(cache_write_tokens=tokens), prices) - input_dollars(
        Usage(cache_read_tokens=tokens), prices
    )


def charged(
    findings: Sequence[Finding], pairs: Sequence[tuple[float, float]], gap: float
) -> dict[str, float]:
    """Dollars lost per cause: what each request with a cause cost above its perfect-prefix
    replay, scaled down (never up) so they sum to at most `gap`, the whole conversation's
    excess over the perfect prefix (never below 0).

    Per request the replay is no bound: the perfect prefix writes at a premium what only a
    later request reads (and what no request reads, at a conversation's end), so a request
    can cost less as logged than perfect, and a conversation as a whole too (108 of 4,788
    rows of recorded traffic). Such a saving is nobody's loss; a request with no cause (a
    conversation's first, a read within the rounding) is charged nothing, so no cause
    carries dollars without requests."""
    raw: dict[str, float] = {}
    for finding, (actual, best) in zip(findings, pairs, strict=True):
        if finding.cause_kind is not None and actual > best:
            raw[finding.cause_kind] = raw.get(finding.cause_kind, 0.0) + actual - best
    total = sum(raw.values())
    scale = min(1.0, gap / total) if total > 0 else 0.0
    return {cause: dollars * scale for cause, dollars in raw.items() if dollars * scale >= 1e-9}


def providers_for(own: str, extra: Iterable[str] | None = None) -> list[str]:
    """The providers to price under: the log's own model (when priced), then `extra` (the
    default providers when None)."""
    found = [own] if prices_for(own) is not None else []
    others = default_providers() if extra is None else extra
    return found + [spec for spec in others if spec not in found]
