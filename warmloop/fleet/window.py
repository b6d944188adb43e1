"""A provider's rate limits, and when the next request fits under them (pure).

A provider counts requests and tokens per minute per API key; a fleet sends under one key
from many workers, so the requests sent are counted together (`ratelimit` keeps them in
PostgreSQL) and each new request waits until the window has room for it. The window is a
minute and a little more (`WINDOW`): a request is counted when it leaves the worker, the
provider counts it when it arrives, and the two may differ by a network's delay.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.errors import ConfigurationError

WINDOW = 61.0
"""Seconds a sent request counts against the limits: a minute, and a second for the delay
between leaving a worker and reaching the provider."""
MAX_PAUSE_SECONDS = 3600.0
"""The longest a provider's 429 hint holds a key back, fleet-wide: a quota that resets within
the hour is waited for; a longer hint (`Retry-After: inf`, a forged or broken reply) is cut."""


@dataclass(frozen=True)
class Limit:
    """Requests and tokens (prompt and output) per minute for one provider key; None: no
    limit. `key` names the count every model's requests go under; None: each model's own
    name (`anthropic:claude-sonnet-4-6`, `openai-compatible:URL#MODEL`)."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        for what, value in (
            ("requests per minute", self.requests_per_minute),
            ("tokens per minute", self.tokens_per_minute),
        ):
            wrong = isinstance(value, bool) or not isinstance(value, int) or value < 1
            if value is not None and wrong:
                raise ConfigurationError(f"{what} must be an integer >= 1, got {value!r}")
        if self.key is not None and not self.key.strip():
            raise ConfigurationError("the limit key is empty; name the provider key, or omit it")

    @property
    def limited(self) -> bool:
        return self.requests_per_minute is not None or self.tokens_per_minute is not None


@dataclass(frozen=True)
class KeyUse:
    """One request counted against a key: when it was sent, and its tokens."""

    at: float
    tokens: int


def wait_seconds(
    sent: Sequence[KeyUse], now: float, limit: Limit, tokens: int, paused_until: float = 0.0
) -> float:
    """Seconds from `now` until a request of `tokens` fits: the requests of `sent` still in
    the window leave room for one more and for its tokens, and the key's pause (a provider's
    429 hint) is over. 0 when it may go now. A request larger than the whole token limit
    counts as the whole limit: it goes once the window holds no tokens."""
    live = sorted((s for s in sent if s.at > now - WINDOW), key=lambda s: s.at)
    until = max(min(paused_until, now + MAX_PAUSE_SECONDS), now)
    if math.isnan(until):  # a stored NaN pause holds nothing back
        until = now
    rpm = limit.requests_per_minute
    if rpm is not None and len(live) >= rpm:
        # the oldest len(live) - rpm + 1 must leave the window
        until = max(until, live[len(live) - rpm].at + WINDOW)
    tpm = limit.tokens_per_minute
    if tpm is not None:
        excess = sum(s.tokens for s in live) + min(tokens, tpm) - tpm
        for s in live:
            if excess <= 0:
                break
            excess -= s.tokens
            until = max(until, s.at + WINDOW)
    return until - now


def bounded_pause(seconds: float) -> float:
    """A 429's hinted wait as a key's pause: between 0 and MAX_PAUSE_SECONDS (infinity
    included); NaN, a wait no server can mean, is no pause."""
    if math.isnan(seconds):
        return 0.0
    return min(max(seconds, 0.0), MAX_PAUSE_SECONDS)


NO_LIMIT = Limit()
"""No limit: requests go as fast as the queue's concurrency lets them."""
