"""Per request of one conversation: tokens, the reusable prefix, the first divergence and why.

Each request is measured against the one it continues (its parent in the conversation: the
previous one, or an earlier one where the conversation branched). A request that does not
extend it gets the guard's divergence and its classified cause (`wire.causes`). A request
that does extend it but read less from the cache than it could (by more than the provider's
rounding) gets the kind of miss instead (`wire.miss_kinds`): below the minimum, idle past the
TTL, a marker, a write not yet landed, a TTL switched, routed elsewhere, evicted. Cache
reads, writes and misses are the logged usage when the log has it, else the simulator's
under the model's own profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from warmloop.audit.attribution import attribute
from warmloop.audit.blocks import conversation_pieces, ideal_marks, sized
from warmloop.errors import ConfigurationError
from warmloop.exchange.formats import model_name, written_ttl
from warmloop.exchange.grouping import Conversation, Entry
from warmloop.exchange.response_facts import describe_diagnostics, normalise_usage
from warmloop.exchange.reuse import (
    estimate_tokens,
    marker_cause,
    pieces,
    reusable_tokens,
    reuse_facts,
)
from warmloop.facts.profiles import CacheProfile
from warmloop.facts.usage import Usage
from warmloop.simulate import Block, CacheSimulator, SimRequest
from warmloop.wire.guard import compare
from warmloop.wire.miss_kinds import (
    ReuseFacts,
    affinity_miss,
    affinity_window,
    miss_cause,
)
from warmloop.wire.pieces import Pieces
from warmloop.wire.verdict import ProviderVerdict

CONTEXT = 80
EXCERPT = 240


@dataclass(frozen=True)
class Divergence:
    """Where a request stopped extending the previous one, with text from both sides."""

    section: str
    position: int
    context: str
    """The shared text just before the divergence."""
    before: str
    after: str


@dataclass(frozen=True)
class Finding:
    """One request of a conversation as the audit sees it (`number` from 1)."""

    number: int
    line: int
    at: float | None
    model: str
    prompt_tokens: int
    estimated: bool
    """True when no usage was logged: tokens are estimated and reads simulated."""
    cached: int
    written: int
    uncached: int
    limit: int
    """What the cache could serve at most: the previous request's tokens (or this one's)."""
    reusable: int
    """Tokens of the prefix shared with the previous request."""
    idle_seconds: float | None
    divergence: Divergence | None
    cause_kind: str | None
    cause: str | None
    diagnostics: str | None
    parent: int | None = None
    """The number of the request this one continues (None for a conversation's first):
    the previous one, or an earlier one when the conversation branched."""
    verdict: ProviderVerdict | None = None
    """The provider's own verdict on this request, when the log has its diagnostics."""
    agrees: bool | None = None
    """Whether that verdict agrees with the audit's reading (None: nothing to compare)."""


def request_times(entries: Sequence[Entry]) -> list[float]:
    """Each request's time, one second after the previous where the log has none."""
    times: list[float] = []
    for entry in entries:
        at = entry.record.at
        previous = times[-1] if times else 0.0
        times.append(at if at is not None and at >= previous else previous + 1.0)
    return times


def prompt_tokens(entry: Entry) -> tuple[int, Usage | None]:
    """The request's prompt tokens (logged usage, else estimated) and its logged usage."""
    raw = entry.record.usage
    usage = normalise_usage(raw, entry.wire if entry.format_known else None) if raw else None
    if usage is not None and usage.prompt_tokens > 0:
        return usage.prompt_tokens, usage
    return estimate_tokens(entry.stream.length), None


def _simulate_own(
    conversation: Conversation, sizes: Sequence[int], profile: CacheProfile
) -> list[Usage]:
    simulator = CacheSimulator(profile)
    usages: list[Usage] = []
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
        if not conversation.wire.explicit_breakpoints:
            found = Pieces(found.texts, ideal_marks(len(found.texts), common, profile.ttl))
        before = sent[parent] if parent is not None else ()
        blocks = sized(found.texts, tokens, found.marks, before, common)
        try:
            usages.append(simulator.request(SimRequest(at, blocks)))
        except ConfigurationError:  # a request the API would have refused: nothing cached
            usages.append(Usage(input_tokens=tokens))
        seen.append(found)
        sent.append(blocks)
    return usages


@dataclass(frozen=True)
class _Shared:
    """What a request shares with its parent: the tokens it could read at most (`limit`),
    the reusable prefix, the pause since the parent, and where it stopped extending it or
    why it read less than it could."""

    divergence: Divergence | None = None
    cause: tuple[str, str] | None = None
    reusable: int = 0
    limit: int = 0
    idle: float | None = None


def _against_parent(
    conversation: Conversation,
    profile: CacheProfile,
    k: int,
    current: Pieces,
    sizes: Sequence[int],
    times: Sequence[float],
    seen: Sequence[Pieces],
    sent: Sequence[ReuseFacts],
    affinity: float | None = None,
) -> _Shared:
    """Request `k` measured against its parent: the guard's divergence and cause where it
    does not extend it, else the kind of miss where it read less than it could."""
    parent = conversation.parents[k]
    if parent is None:
        return _Shared()
    entry, before = conversation.entries[k], conversation.entries[parent]
    tokens = sizes[k]
    idle = times[k] - times[parent] if entry.record.at is not None else None
    check = compare(before.stream, entry.stream, context=EXCERPT)
    limit = min(sizes[parent], tokens)
    # Each request's tokens per character differ a little: never past the limit.
    server = sent[k].server_tools or sent[parent].server_tools
    reusable = reusable_tokens(check.reusable, tokens, entry.stream.length, limit, server)
    bust = check.bust
    if bust is not None:
        lead = entry.stream.text[max(0, bust.position - CONTEXT) : bust.position]
        divergence = Divergence(bust.section, bust.position, lead, bust.before, bust.after)
        return _Shared(divergence, (bust.kind, bust.cause), reusable, limit, idle)
    lookback = profile.lookback_blocks if profile.mode == "explicit" else None
    explicit = conversation.wire.explicit_breakpoints
    marker = marker_cause(seen[parent], current, lookback) if explicit and lookback else None
    cause = miss_cause(profile, sent, k, parent, reusable, idle, marker, affinity)
    return _Shared(None, cause, reusable, limit, idle)


def analyse(
    conversation: Conversation, profile: CacheProfile, affinity: float | None = None
) -> list[Finding]:
    """The findings of every request of a conversation, under its model's own profile
    (`affinity`: the router's affinity window in seconds, where the caller knows it; else
    one the conversation's own gaps show is named: `with_affinity`)."""
    entries = conversation.entries
    sized_usage = [prompt_tokens(entry) for entry in entries]
    sizes = [tokens for tokens, _ in sized_usage]
    simulated = (
        _simulate_own(conversation, sizes, profile)
        if any(usage is None for _, usage in sized_usage)
        else []
    )
    times = request_times(entries)
    findings: list[Finding] = []
    seen: list[Pieces] = []
    sent: list[ReuseFacts] = []
    for k, entry in enumerate(entries):
        tokens, usage = sized_usage[k]
        usage = usage or simulated[k]
        current = pieces(entry)
        record = entry.record
        at = times[k] if record.at is not None else None
        ttl = written_ttl(entry.wire, record.body, current)
        sent.append(reuse_facts(entry, current, (at, record.answered_at), usage, ttl))
        shared = _against_parent(
            conversation, profile, k, current, sizes, times, seen, sent, affinity
        )
        parent = conversation.parents[k]
        section = shared.divergence.section if shared.divergence else None
        earlier = entries[parent] if parent is not None else None
        verdict, agrees, cause = attribute(entry, earlier, section, shared.cause)
        findings.append(
            Finding(
                number=k + 1,
                line=entry.record.line,
                at=entry.record.at,
                model=model_name(entry.record.body, entry.record.path),
                prompt_tokens=tokens,
                estimated=sized_usage[k][1] is None,
                cached=usage.cache_read_tokens,
                written=usage.cache_write_tokens,
                uncached=usage.uncached_tokens,
                limit=shared.limit,
                reusable=shared.reusable,
                idle_seconds=shared.idle,
                divergence=shared.divergence,
                cause_kind=cause[0] if cause else None,
                cause=cause[1] if cause else None,
                diagnostics=describe_diagnostics(entry.record.diagnostics, entry.wire),
                parent=parent + 1 if parent is not None else None,
                verdict=verdict,
                agrees=agrees,
            )
        )
        seen.append(current)
    return findings if affinity is not None else with_affinity(findings, profile)


def with_affinity(findings: Sequence[Finding], profile: CacheProfile) -> list[Finding]:
    """`findings` with the evictions past an affinity window named `affinity`, where the
    conversation's own returns inside the TTL show one (`miss_kinds.affinity_window`:
    every return after a longer pause missed, every one after a shorter pause read)."""
    returns = [
        (f.idle_seconds, f.cause_kind == "evicted")
        for f in findings
        if f.parent is not None
        and f.divergence is None
        and f.idle_seconds is not None
        and f.cause_kind in (None, "evicted")
        and f.reusable >= profile.min_cacheable_tokens
    ]
    window = affinity_window(returns)
    if window is None:
        return list(findings)
    said = (
        f"an affinity window this conversation's gaps show (it read after "
        f"{window[0] / 60:.1f} min idle and missed after every pause from "
        f"{window[1] / 60:.1f} min)"
    )
    out = []
    for f in findings:
        if f.cause_kind == "evicted" and f.idle_seconds is not None:
            kind, cause = affinity_miss(profile, f.idle_seconds, said)
            f = replace(f, cause_kind=kind, cause=cause)
        out.append(f)
    return out
