"""Why a request whose prefix held still missed: every kind of miss no diff explains, for
the audit (`audit.analysis`, from a log) and the live agent (`keepalive.live_misses`, from its
own requests) alike.

The request extends the one it continues (its parent), yet read less from the cache than
that prefix. In order, the first that fits names it:

- `below-minimum`: the shared prefix is shorter than the model caches at all;
- `idle`: the pause since the parent was past the TTL: the entry expired (not where a durable
  tier still serves it: Vertex AI's, `CacheProfile.durable_seconds`);
- `no-cache-key`: the model needs the routing key for its matching (GPT-5.6 and later:
  without `prompt_cache_key` a request falls back to the older matching) and the request
  had none;
- `cache-marker` (explicit breakpoints): no marker, a moved marker, or one past the lookback;
- `not-landed`: sent before its parent was answered: concurrent requests sharing a prefix,
  the write they would read not yet made;
- `ttl-switch`: written for another TTL than its parent (Anthropic's `cache_control.ttl`,
  OpenAI's `prompt_cache_options.ttl` or `prompt_cache_retention`): a new tier writes the
  prefix again;
- `routed`: another request of the conversation read this very prefix moments before
  (`ROUTED_SECONDS`): the entry was alive, so this request reached another machine
  (OpenAI documents spill-over past about 15 requests a minute for one key and prefix);
- `affinity`: the pause was longer than the router's affinity window (a gateway's sticky
  session ends, its affinity is fixed at a few minutes) though inside the TTL: the request
  reached a machine without the entry. The window is the router's documented one where the
  caller knows it, else read from the conversation's own gaps (`affinity_window`: every
  return after a longer pause missed, every one after a shorter pause read);
- `evicted`: inside the TTL, nothing else explains it, and the log supports it three ways:
  the prefix held, the pause is long enough for the parent's write to have landed (its
  answer logged before the request, else `LANDED_SECONDS`), and the billed tokens are the
  request's own (no server-side tool results billed as input, and under explicit caching
  the parent wrote or read the prefix): the provider dropped the entry early;
- `unexplained`: what the log cannot tell apart, with what it lacks.

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
LANDED_SECONDS = 60.0
"""Where the log has no answer time for the parent, a request sent this long after it is
taken to follow its answer (and its write): sooner, an eviction cannot be told from a write
not yet landed."""
AFFINITY_RETURNS = 2
"""Returns on each side (misses after the longer pauses, reads after the shorter ones) a
conversation needs before its gaps name an affinity window."""

PROVIDERS_DOING = frozenset({"evicted", "routed", "unexplained"})
"""Kinds no client change caused: a provider verdict that it lost the entry takes them."""
LOGGED_MISSES = frozenset(
    {
        "provider-lost",
        "evicted",
        "routed",
        "not-landed",
        "ttl-switch",
        "no-cache-key",
        "affinity",
    }
)
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
    keyed: bool | None = None
    """Whether it carried the routing key its provider matches on (`prompt_cache_key`);
    None where unknown."""
    written: int = 0
    """Tokens it wrote to the cache, as billed (explicit caching reports them)."""
    server_tools: bool = False
    """It offered server-side tools (web search, code execution) whose results the provider
    bills as its input: its billed tokens are not its request's text."""


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
    affinity: float | None = None,
) -> tuple[str, str] | None:
    """The kind of request `k`'s miss and the sentence that names it, or None when it read
    what it could (`reusable`: the tokens it shares with its `parent`; `idle`: seconds
    since the parent, None where the log has no time; `marker`: why explicit breakpoints
    could not read, or None; `affinity`: the router's affinity window in seconds, where
    known)."""
    shortfall = reusable - requests[k].cached
    if shortfall <= max(profile.increment_tokens, TOLERANCE * reusable):
        return None
    found = _clients_doing(profile, requests[k], requests[parent], reusable, idle, marker)
    if found is not None:
        return found
    return _providers_doing(profile, requests, k, parent, reusable, idle, affinity)


def missed(profile: CacheProfile, reusable: int, cached: int) -> bool:
    """Whether a request that shares `reusable` tokens with its parent read less than
    them by more than the rounding (`miss_cause`'s own test)."""
    return reusable - cached > max(profile.increment_tokens, TOLERANCE * reusable)


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
    durable = profile.durable_seconds
    if idle is not None and idle > profile.ttl_seconds and (durable is None or idle > durable):
        return (
            "idle",
            f"idle {idle / 60:.1f} min since the previous request, past the "
            f"{profile.ttl_seconds / 60:g} min cache TTL ({profile.ttl})",
        )
    if profile.needs_cache_key and current.keyed is False:
        return (
            "no-cache-key",
            f"no prompt_cache_key: {profile.entry} matches a request to its cache entries "
            "through the key, and one without it falls back to the older matching (set "
            "prompt_cache_key to the conversation's id)",
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
    affinity: float | None,
) -> tuple[str, str]:
    """The kinds no client change caused (`PROVIDERS_DOING`): the request reached another
    machine, the router's affinity ended, the entry was dropped early, or the log cannot
    tell."""
    shared = common_pieces(requests[parent].pieces, requests[k].pieces)
    if _read_just_before(requests, k, parent, shared, reusable):
        return (
            "routed",
            "routed to another machine: another request of this conversation read this "
            f"prefix within {ROUTED_SECONDS:g} s, so the entry was alive (send a routing key, "
            "and keep under about 15 requests a minute per key and prefix)",
        )
    if affinity is not None and idle is not None and idle > affinity:
        return affinity_miss(profile, idle, f"its {affinity / 60:g} min affinity window")
    lacking = _eviction_unsupported(profile, requests[k], requests[parent], reusable, idle)
    if lacking is None and idle is not None:
        return (
            "evicted",
            f"evicted within the TTL: the prefix matched after {idle / 60:.1f} min idle, "
            f"inside the {profile.ttl_seconds / 60:g} min TTL, and nothing else explains it "
            "(the provider dropped the entry early)",
        )
    return (
        "unexplained",
        f"the prefix matched but was not read from the cache, and {lacking} (an eviction, "
        "a routing and a write not yet landed cannot be told apart)",
    )


def affinity_miss(profile: CacheProfile, idle: float, window: str) -> tuple[str, str]:
    """The `affinity` kind for a miss after `idle` seconds, past the router's `window` (how
    it is known, in words) though inside the cache's TTL."""
    return (
        "affinity",
        f"the router's affinity ended: {idle / 60:.1f} min idle is past {window}, though "
        f"inside the {profile.ttl_seconds / 60:g} min cache TTL, so the request reached a "
        "machine without the entry (lengthen the affinity to the TTL, or keep the session "
        "warm inside the window)",
    )


def _eviction_unsupported(
    profile: CacheProfile,
    current: ReuseFacts,
    before: ReuseFacts,
    reusable: int,
    idle: float | None,
) -> str | None:
    """What the log lacks to call a miss an eviction, or None where the timing and the
    billed tokens support one (the prefix held: the caller's to know)."""
    if idle is None or current.at is None:
        return "the log has no times"
    if before.answered_at is None and idle < LANDED_SECONDS:
        return (
            f"it was sent {idle:.1f} s after the request it continues, whose answer the log "
            "does not time: its write may not have landed"
        )
    if current.server_tools or before.server_tools:
        return (
            "the billed input holds server-side tool results (a web search, code "
            "execution) that are no part of the request's reusable prefix"
        )
    explicit = profile.mode == "explicit"
    if explicit and before.cached + before.written < (1 - TOLERANCE) * reusable:
        return (
            "the request it continues wrote and read less than the prefix they share: "
            "no entry for it is billed"
        )
    return None


def affinity_window(returns: Sequence[tuple[float, bool]]) -> tuple[float, float] | None:
    """The affinity window a conversation's own returns show, as (the longest pause after
    which it still read, the shortest after which it missed), or None: `returns` are its
    requests whose prefix held inside the TTL, each with the pause before it and whether it
    missed. A window is named only where it separates them cleanly, with at least
    `AFFINITY_RETURNS` on each side and the misses past `LANDED_SECONDS`: then every return
    after a longer pause missed and every one after a shorter pause read, which an eviction
    (a draw on any return) does not do."""
    reads = [pause for pause, miss in returns if not miss]
    misses = [pause for pause, miss in returns if miss]
    if len(reads) < AFFINITY_RETURNS or len(misses) < AFFINITY_RETURNS:
        return None
    longest, shortest = max(reads), min(misses)
    if shortest <= longest or shortest < LANDED_SECONDS:
        return None
    return longest, shortest


PROVIDER_LOST = "provider-lost"
OPENING_REWRITTEN = "opening-rewritten"
"""A conversation's first request wrote again the opening an earlier conversation of the
same agent had in the cache (a sub-agent, a fork, a sibling task): the audit's, from a log
(`audit.opening_rewrites`); a proxy sees it the same way across the conversations it forwards."""


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
