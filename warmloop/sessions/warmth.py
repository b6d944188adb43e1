"""Is a session's provider cache probably still warm? Idle time against the provider's
`cold_after` (the safe side of its cache lifetime) for the model and TTL in use."""

from __future__ import annotations

import math
from dataclasses import dataclass

from warmloop.errors import ConfigurationError
from warmloop.facts.profiles import profile_for
from warmloop.sessions.session import SessionInfo


@dataclass(frozen=True)
class Warmth:
    """Idle seconds since the last request and the provider's `cold_after` (None when
    unknown: no request yet, or a model without a cache profile)."""

    idle_seconds: float | None
    cold_after: float | None

    @property
    def warm(self) -> bool | None:
        """True if the cache is expected warm, False if surely cold, None if unknown."""
        if self.idle_seconds is None or self.cold_after is None:
            return None
        return self.idle_seconds < self.cold_after

    def describe(self) -> str:
        """`idle 2 h 5 min; cache expected cold (cold after 5 min)` and the like."""
        if self.idle_seconds is None:
            return "no request sent yet"
        idle = f"idle {duration(self.idle_seconds)}"
        if self.cold_after is None:
            return f"{idle}; cache state unknown for this model"
        limit = (
            "it never expires"
            if math.isinf(self.cold_after)
            else f"cold after {duration(self.cold_after)}"
        )
        state = "warm" if self.warm else "cold"
        return f"{idle}; cache expected {state} ({limit})"


def cold_after(model: str, cache_ttl: str = "") -> float | None:
    """The provider's `cold_after` for `model` under `cache_ttl`, None if it has no profile."""
    if not model:
        return None
    try:
        return profile_for(model, cache_ttl=cache_ttl or None).cold_after
    except ConfigurationError:
        try:
            return profile_for(model).cold_after
        except ConfigurationError:
            return None


def warmth(info: SessionInfo, now: float) -> Warmth:
    """How warm `info`'s provider cache is expected to be at `now`."""
    return Warmth(info.idle_seconds(now), cold_after(info.meta.model, info.cache_ttl))


def duration(seconds: float) -> str:
    """`45 s`, `12 min`, `3 h 4 min`, `2 d 5 h`."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"
