"""The live guard's misses: a request whose prefix held (the guard saw no bust), yet whose
usage shows it read less than the request before it left, named as it is answered by the
kind the audit gives such a miss (`wire.miss_kinds.miss_cause`: below the minimum, idle past
the TTL, a TTL tier switched, routed elsewhere, evicted inside the TTL, or the provider's
own verdict), from what the run knows: its requests' times, TTLs, reads and wire pieces,
and the keep-alives it sent since the request before. A run waits for each answer before
its next request, so a write not yet landed is the audit's to name (a fan-out's requests,
from a log's times).
"""

from __future__ import annotations

from collections.abc import Sequence

from warmloop.facts.profiles import CacheProfile
from warmloop.keepalive.sent import SentRequest
from warmloop.wire.miss_kinds import TOLERANCE, Miss, ReuseFacts, miss_cause, provider_charged


def live_miss(
    profile: CacheProfile,
    requests: Sequence[SentRequest],
    refreshed: float | None = None,
    *,
    timed: bool = True,
) -> Miss | None:
    """The miss on the last of a run's `requests`, or None (it read what the one before
    left, its prefix moved, or it is the run's first). `refreshed`: when a keep-alive last
    read the prefix since the request before (the entry's clock starts there); `profile`:
    the model's cache rules, with any minimum learned from the wire; `timed`: the
    requests' times are on a clock (without a keep-alive policy they are not)."""
    if len(requests) < 2:
        return None
    previous, current = requests[-2], requests[-1]
    record = current.record
    if record is None or record.prefix.bust is not None or record.prefix.maintenance:
        return None
    reusable = min(previous.prompt_tokens, current.prompt_tokens)
    cached = record.usage.cache_read_tokens
    if reusable - cached <= max(profile.increment_tokens, TOLERANCE * reusable):
        return None  # read what it could: nothing to name (and no pieces to build)
    last_use = max(previous.at, refreshed if refreshed is not None else previous.at)
    idle = current.at - last_use if timed else None
    sent = [_sent(request, timed) for request in requests]
    k = len(requests) - 1
    cause = miss_cause(profile, sent, k, k - 1, reusable, idle, None)
    cause = provider_charged(record.verdict, cause)
    if cause is None:
        return None
    return Miss(len(requests), cause[0], cause[1], reusable, cached)


def _sent(request: SentRequest, timed: bool) -> ReuseFacts:
    """What the miss rules know of one request the run sent."""
    record, wire = request.record, request.rendered.wire
    cached = record.usage.cache_read_tokens if record is not None else 0
    pieces = (*(text for _, text in wire.head), *wire.items)
    # A run sends its next request once this one is answered: no write of its is unlanded
    # (a fan-out's concurrent requests are the audit's to name, from the log's times), so
    # the answer is taken to come at the send, which an eviction's timing needs.
    at = request.at if timed else None
    written = record.usage.cache_write_tokens if record is not None else 0
    return ReuseFacts(at, at, request.ttl, cached, pieces, written=written)
