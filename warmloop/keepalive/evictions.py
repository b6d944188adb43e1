"""Evictions learned from the wire: how often a provider's cache survives a pause it should.

A request that extends the one before it (the guard saw no bust) and returns inside that
request's TTL should read all the earlier request left in the cache. Its usage says whether
it did: a read short of it (by more than the provider's rounding) is an eviction, the entry
dropped before its TTL; a full read is a survival. Each such return is learned per model
(`Learned.returned`, `warmloop.memory`), and the keep-alive rule weighs a pause's miss by
the survival (`memory.survival`): a keep-alive only saves the miss when the entry would have lived.
"""

from __future__ import annotations

from warmloop.facts.profiles import CacheProfile
from warmloop.keepalive.sent import SentRequest

TOLERANCE = 0.05
"""A read this much short of what was left (or one rounding increment) is no eviction."""


def evicted(previous: SentRequest, current: SentRequest, profile: CacheProfile) -> bool | None:
    """Whether `current` found what `previous` left evicted: True (the prefix held, it was
    sent inside `previous`'s TTL, its read fell short), False (it read it), or None (no
    such return: a bust, a rewrite, a pause past the TTL, nothing cacheable)."""
    record = current.record
    if record is None or record.prefix.bust is not None or record.prefix.maintenance:
        return None
    retention = profile.retention_for(previous.ttl) if previous.ttl else profile.retention
    if current.at - previous.at > retention.seconds:
        return None
    left = profile.cacheable(previous.prompt_tokens)
    if left <= 0:
        return None
    short = left - record.usage.cache_read_tokens
    return short > max(profile.increment_tokens, TOLERANCE * left)
