"""Why a request whose prefix held still missed: every kind of miss no diff explains, for
the audit (`audit.analysis`, from a log) and the live agent (`keepalive.live_misses`, from its
own requests) alike.

The request extends the one it continues (its parent), yet read less from the cache than
that prefix. In order, the first that fits names it:

- `below-minimum`: the shared prefix is shorter than the model caches at all;
- `idle`: the pause since the parent was past the TTL: the entry expired;
- `cache-marker` (explicit breakpoints): no marker, a moved marker, or one past the lookback;
- `not-landed`: sent before its parent was answered: concurrent requests sharing a prefix,
  the write they would read not yet made;
- `ttl-switch`: written for another TTL than its parent (Anthropic's `cache_control.ttl`,
  OpenAI's `prompt_cache_options.ttl` or `prompt_cache_retention`): a new tier writes the
  prefix again;
- `routed`: another request of the conversation read this very prefix moments before
  (`ROUTED_SECONDS`): the entry was alive, so this request reached another machine
  (OpenAI documents spill-over past about 15 requests a minute for one key and prefix);
- `evicted`: inside the TTL, nothing else explains it: the provider dropped the entry early;
- `unexplained`: no times to tell the kinds apart.

The provider's own verdict, where there is one, takes the kinds no client change caused
(`provider_charged`: `provider-lost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.facts.profiles import CacheProfile
from warmloop.wire.pieces import common_pieces
from warmloop.wire.verdict import ProviderVerdict

TOLERANCE = 0.05
"""A read this much below the reusable prefix (or one rounding increment) is not a miss."""
ROUTED_SECONDS = 60.0
"""A prefix read this recently by another request of the conversation was alive: a miss on
it is routing, not expiry or eviction."""

PROVIDERS_DOING = frozenset({"evicted", "routed", "unexplained"})
"""Kinds no client change caused: a provider verdict that it lost the entry takes them."""
LOGGED_MISSES = frozenset({"provider-lost", "evicted", "routed", "not-landed", "ttl-switch"})
"""Misses the log shows that a replay under the cache rules would read: the audit's costs
replay each on a cache that lost everything, so its dollars are charged to its kind."""


@dataclass(frozen=True)
class ReuseFacts:
    """What the miss rules know of one request of a conversation."""

    at: float | None
    answered_at: float | None
    ttl: str | None
    cached: int
    pieces: tuple[str, ...]
    """The request's prefix in pieces (its blocks, or its wire stream's head and items):
    two requests share a prefix as far as their leading pieces match."""


def _read_just_before(
    requests: Sequence[ReuseFacts], k: int, parent: int, reusable_pieces: int, reusable: int
) -> bool:
    """Whether a request of the conversation other than the parent read the prefix request
    `k` shares with its parent (`reusable_pieces` pieces, `reusable` tokens) within
    `ROUTED_SECONDS` before `k` was sent."""
    at = requests[k].at
    if at is None:
        return False
    shared = requests[k].pieces[:reusable_pieces]
    for n in range(k - 1, -1, -1):  # times never go back: stop past the window
        other = requests[n]
        if other.at is not None and at - other.at > ROUTED_SECONDS:
            return False
        if n == parent or other.at is None or other.cached < (1 - TOLERANCE) * reusable:
            continue
        if other.pieces[: len(shared)] == shared:
            return True
    return False


def miss_cause(
    profile: CacheProfile,
    requests: Sequence[ReuseFacts],
    k: int,
    parent: int,
    reusable: int,
    idle: float | None,
    marker: str | None,
) -> tuple[str, str] | None:
    """The kind of request `k`'s miss and the sentence that names it, or None when it read
    what it could (`reusable`: the tokens it shares with its `parent`; `idle`: seconds
    since the parent, None where the log has no time; `marker`: why explicit breakpoints
    could not read, or None)."""
    shortfall = reusable - requests[k].cached
    if shortfall <= max(profile.increment_tokens, TOLERANCE * reusable):
        return None
    found = _clients_doing(profile, requests[k], requests[parent], reusable, idle, marker)
    if found is not None:
        return found
    return _providers_doing(profile, requests, k, parent, reusable, idle)


def _clients_doing(
    profile: CacheProfile,
    current: ReuseFacts,
    before: ReuseFacts,
    reusable: int,
    idle: float | None,
    marker: str | None,
) -> tuple[str, str] | None:
    """The kinds the client's own requests explain: too short a prefix, too long a pause,
    a misplaced marker, a request sent too early, another TTL."""
    if reusable < profile.min_cacheable_tokens:
        return (
            "below-minimum",
            f"below the minimum cacheable length: {reusable:,} reusable tokens, "
            f"{profile.entry} caches from {profile.min_cacheable_tokens:,}",
        )
    if idle is not None and idle > profile.ttl_seconds:
        return (
            "idle",
            f"idle {idle / 60:.1f} min since the previous request, past the "
            f"{profile.ttl_seconds / 60:g} min cache TTL ({profile.ttl})",
        )
    if marker is not None:
        return "cache-marker", marker
    if (
        before.answered_at is not None
        and current.at is not None
        and current.at < before.answered_at
    ):
        early = before.answered_at - current.at
        return (
            "not-landed",
            f"sent {early:.1f} s before the request it continues was answered: the write it "
            "would read had not landed (send requests that share a prefix after the first "
            "answers)",
        )
    if (before.ttl or profile.ttl) != (current.ttl or profile.ttl):
        return (
            "ttl-switch",
            f"written for {current.ttl or profile.ttl} after {before.ttl or profile.ttl}: a "
            "new TTL tier writes the prefix again (keep one TTL through a session)",
        )
    return None


def _providers_doing(
    profile: CacheProfile,
    requests: Sequence[ReuseFacts],
    k: int,
    parent: int,
    reusable: int,
    idle: float | None,
) -> tuple[str, str]:
    """The kinds no client change caused (`PROVIDERS_DOING`): the request reached another
    machine, the entry was dropped early, or the log cannot tell."""
    shared = common_pieces(requests[parent].pieces, requests[k].pieces)
    if _read_just_before(requests, k, parent, shared, reusable):
        return (
            "routed",
            "routed to another machine: another request of this conversation read this "
            f"prefix within {ROUTED_SECONDS:g} s, so the entry was alive (send a routing key, "
            "and keep under about 15 requests a minute per key and prefix)",
        )
    if idle is not None:
        return (
            "evicted",
            f"evicted within the TTL: the prefix matched after {idle / 60:.1f} min idle, "
            f"inside the {profile.ttl_seconds / 60:g} min TTL, and nothing else explains it "
            "(the provider dropped the entry early)",
        )
    return (
        "unexplained",
        "the prefix matched but was not read from the cache (the log has no times to tell "
        "an eviction, a routing or a write not yet landed apart)",
    )


PROVIDER_LOST = "provider-lost"


def provider_charged(
    verdict: ProviderVerdict | None, cause: tuple[str, str] | None
) -> tuple[str, str] | None:
    """`cause`, or `provider-lost` where the prefix held, the miss was none of the client's
    doing (`PROVIDERS_DOING`) and the provider says it lost its record of the earlier
    request (Anthropic's `previous_message_not_found`, OpenAI's
    `comparison_response_not_found`)."""
    if verdict is None or not verdict.provider_loss or cause is None:
        return cause
    if cause[0] not in PROVIDERS_DOING:
        return cause
    return (
        PROVIDER_LOST,
        "the provider lost its cache entry: the prefix matched, and the provider says it "
        f"holds no record of the earlier request ({verdict.reason}); not the client's doing",
    )


@dataclass(frozen=True)
class Miss:
    """A miss the live guard named after request `request` (1 for a run's first) was
    answered: its prefix held, yet it read `cached` of the `reusable` tokens it shared with
    the request before; `kind` and `cause` as `miss_cause` names them."""

    request: int
    kind: str
    cause: str
    reusable: int
    cached: int

    def __str__(self) -> str:
        return (
            f"cache miss on request {self.request} ({self.kind}): read {self.cached:,} of "
            f"{self.reusable:,} reusable tokens; {self.cause}"
        )
