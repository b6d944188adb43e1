"""The audit of one log: conversations, per-request findings, totals and dollars per cause.

`audit(contents)` is pure over what `read_log` returned (or what `iter_log` yields, to read
a log in memory that grows with its distinct text, not its size); `to_json` gives the
report as plain data (what `warmloop audit --json` prints).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from warmloop.audit.analysis import Finding, analyse
from warmloop.audit.costs import ProviderCost, provider_cost, providers_for
from warmloop.audit.opening_rewrites import Rewritten, rewritten_openings
from warmloop.exchange.formats import (
    detect_format,
    format_from_path,
    model_name,
    model_spec,
    own_profile,
    read_stream,
    routing_key,
)
from warmloop.exchange.grouping import Conversation, Entry, group
from warmloop.exchange.log import LogContents, LoggedRequest, slim
from warmloop.messages import JsonData, JsonObject
from warmloop.wire.miss_kinds import OPENING_REWRITTEN, PROVIDER_LOST

CAUSE_LABELS = {
    "key-order": "key order changed",
    "tools-changed": "tools added, removed or reordered",
    "tool-schema": "tool schema text changed",
    "parameters": "request parameters changed",
    "model": "model changed",
    "volatile-value": "volatile value in the prompt",
    "system-changed": "system prompt changed",
    "reasoning-dropped": "reasoning or signatures dropped",
    "messages-removed": "messages removed",
    "messages-summarised": "messages summarised",
    "messages-inserted": "messages inserted before an earlier one",
    "message-rebuilt": "rebuilt message (text inserted before its end)",
    "content-replaced": "earlier content replaced (pruning)",
    "content-truncated": "earlier content truncated",
    "history-trimmed": "history trimmed",
    "history-rewritten": "history rewritten",
    "below-minimum": "below the minimum cacheable length",
    "idle": "idle past the TTL",
    "cache-marker": "cache marker moved or past the lookback",
    "not-landed": "a write not yet landed (concurrent requests)",
    "ttl-switch": "a TTL tier switched mid-session",
    "routed": "routed to another machine",
    "evicted": "evicted within the TTL",
    "unexplained": "not explained",
    "provider-lost": "the provider (it lost the entry)",
    "no-cache-key": "no prompt_cache_key on a model that needs one",
    "affinity": "the router's affinity shorter than the TTL",
    "opening-rewritten": "a shared opening written again (sub-agents, forks)",
}
"""How each cause kind is named for people."""


def cause_label(kind: str) -> str:
    """The people's name of a cause kind."""
    return CAUSE_LABELS.get(kind, kind)


@dataclass(frozen=True)
class ConversationReport:
    """One conversation: its requests as the audit sees them and its cost per provider."""

    number: int
    label: str
    format: str
    model: str
    profile: str
    findings: tuple[Finding, ...]
    costs: tuple[ProviderCost, ...]
    written_tokens: int = 0
    """Tokens written to the cache: the billed cache writes where the provider reports them
    (explicit caching), else every token not read (automatic caching writes them all)."""

    @property
    def largest_prompt(self) -> int:
        """The largest context the conversation held (prompt tokens of one request)."""
        return max((f.prompt_tokens for f in self.findings), default=0)

    @property
    def rewrite_factor(self) -> float:
        """Tokens written to the cache over the largest context the conversation held: 1.0
        where each token was written once, more where history was written again (a
        rewrite, a miss, a re-sent opening). Users compute it by hand from their bills."""
        largest = self.largest_prompt
        return self.written_tokens / largest if largest else 0.0

    @property
    def prompt_tokens(self) -> int:
        """All prompt tokens of the conversation."""
        return sum(f.prompt_tokens for f in self.findings)

    @property
    def cached(self) -> int:
        """Prompt tokens read from the cache."""
        return sum(f.cached for f in self.findings)

    @property
    def limit(self) -> int:
        """What a perfect cache could have served: the sum of the requests' limits."""
        return sum(f.limit for f in self.findings)

    @property
    def hit_rate(self) -> float:
        """Cached share of all prompt tokens."""
        return self.cached / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def cached_over_limit(self) -> float:
        """Cached tokens of requests 2.. against their limit (1.0 = the physical limit)."""
        later = self.findings[1:]
        limit = sum(f.limit for f in later)
        return min(sum(f.cached for f in later), limit) / limit if limit else 1.0

    @property
    def busts(self) -> tuple[Finding, ...]:
        """Requests with a classified cause (a bust or an explained miss) that is the
        client's: a miss the provider says it caused is not one (`provider_lost`)."""
        return tuple(f for f in self.findings if f.cause_kind not in (None, PROVIDER_LOST))

    @property
    def provider_lost(self) -> tuple[Finding, ...]:
        """Requests whose miss the provider's own diagnostics put on the provider."""
        return tuple(f for f in self.findings if f.cause_kind == PROVIDER_LOST)


def resent_tokens(finding: Finding) -> int:
    """Prompt tokens re-sent because of the request's cause: those of the previous request
    after the divergence for a bust, the ones the cache did not serve for a miss the cache
    rules explain."""
    served = finding.reusable if finding.divergence is not None else finding.cached
    return max(0, finding.limit - served)


@dataclass(frozen=True)
class CauseTotal:
    """One cause over the whole log: the requests it hit, the tokens re-sent because of
    it, and the dollars it cost per provider against a perfect append-only prefix."""

    kind: str
    requests: int
    resent_tokens: int
    lost_usd: dict[str, float]

    @property
    def label(self) -> str:
        """The people's name of the cause."""
        return cause_label(self.kind)

    @property
    def resent_per_request(self) -> float:
        """Tokens re-sent per request it hit (per step, for a cause that recurs)."""
        return self.resent_tokens / self.requests if self.requests else 0.0


@dataclass(frozen=True)
class AuditReport:
    """A whole log: its conversations and the lines that were skipped (with why)."""

    source: str
    conversations: tuple[ConversationReport, ...]
    skipped: tuple[str, ...]

    @property
    def rewrite_factor(self) -> float:
        """Tokens written to the cache over the largest contexts the conversations held,
        summed over the log (see `ConversationReport.rewrite_factor`)."""
        largest = sum(c.largest_prompt for c in self.conversations)
        written = sum(c.written_tokens for c in self.conversations)
        return written / largest if largest else 0.0

    @property
    def lost_by_cause(self) -> dict[str, dict[str, float]]:
        """Dollars lost per provider and cause, over every conversation."""
        out: dict[str, dict[str, float]] = {}
        for conversation in self.conversations:
            for cost in conversation.costs:
                into = out.setdefault(cost.provider, {})
                for cause, dollars in cost.lost_by_cause.items():
                    into[cause] = into.get(cause, 0.0) + dollars
        return out

    @property
    def causes(self) -> tuple[CauseTotal, ...]:
        """Every cause over the whole log, the costliest first."""
        hits: dict[str, tuple[int, int]] = {}
        for conversation in self.conversations:
            for finding in conversation.findings:
                if finding.cause_kind is not None:
                    count, resent = hits.get(finding.cause_kind, (0, 0))
                    hits[finding.cause_kind] = (count + 1, resent + resent_tokens(finding))
        lost: dict[str, dict[str, float]] = {}
        for provider, causes in self.lost_by_cause.items():
            for kind, dollars in causes.items():
                lost.setdefault(kind, {})[provider] = dollars
        totals = [
            CauseTotal(kind, *hits.get(kind, (0, 0)), lost.get(kind, {}))
            for kind in dict.fromkeys([*hits, *lost])
        ]
        return tuple(sorted(totals, key=lambda t: -max(t.lost_usd.values(), default=0.0)))


def _entries(
    contents: LogContents | Iterable[LoggedRequest | str],
    skipped: list[str],
    refused: list[str] | None = None,
) -> list[Entry]:
    """The entries of the log's requests; the lines `iter_log` could not read go to
    `skipped`, the requests the API refused to `refused` (else to `skipped` too)."""
    refused = skipped if refused is None else refused
    found = contents.requests if isinstance(contents, LogContents) else contents
    entries = []
    # One string per distinct canonical piece: each request of a conversation repeats every
    # earlier one, so sharing them keeps the streams' memory to what is distinct, and lets
    # grouping compare shared items by identity. Of each body only the facts read later are
    # kept (`slim`): the streams and blocks hold all the audit needs of the rest.
    seen: dict[str, str] = {}
    ends: dict[int, int] = {}  # a request that extends another repeats its item offsets
    for record in found:
        if isinstance(record, str):
            skipped.append(record)
            continue
        if record.status is not None and record.status >= 400:
            # A refused request never reached the cache: it reads nothing, writes nothing.
            refused.append(f"line {record.line}: the API answered {record.status}")
            continue
        known = format_from_path(record.path) if record.path else None
        wire = known if known is not None else detect_format(record.body)
        stream = read_stream(record.body, wire)
        head = tuple((label, seen.setdefault(text, text)) for label, text in stream.head)
        blocks = None
        if wire.pieces is not None:  # as sent: its markers are where the cache reads
            marked = wire.pieces(record.body, head[0][1])
            blocks = (tuple(seen.setdefault(t, t) for t in marked.texts), marked.marks)
        entries.append(
            Entry(
                slim(record),
                wire,
                replace(
                    stream,
                    head=head,
                    items=tuple(seen.setdefault(text, text) for text in stream.items),
                    item_ends=tuple(ends.setdefault(end, end) for end in stream.item_ends),
                    lineage=None,
                ),
                routing_key(record.body),
                blocks,
                format_known=known is not None,
            )
        )
    return entries


def _report(
    conversation: Conversation,
    providers: Sequence[str] | None,
    opening: Rewritten | None = None,
    affinity: float | None = None,
) -> ConversationReport:
    first = conversation.entries[0].record
    model = model_name(first.body, first.path)
    profile = own_profile(conversation.wire, model)
    findings = analyse(conversation, profile, affinity)
    if opening is not None and findings[0].cause_kind is None:
        findings[0] = replace(
            findings[0], cause_kind=OPENING_REWRITTEN, cause=opening.cause, reusable=opening.shared
        )
    specs = providers_for(model_spec(conversation.wire, model), providers or None)
    costs = tuple(
        cost for spec in specs if (cost := provider_cost(conversation, findings, spec)) is not None
    )
    explicit = profile.mode == "explicit"
    written = sum(f.written + (0 if explicit else f.uncached) for f in findings)
    return ConversationReport(
        conversation.number,
        conversation.label,
        conversation.wire.name,
        model,
        profile.entry,
        tuple(findings),
        costs,
        written,
    )


def audit(
    contents: LogContents | Iterable[LoggedRequest | str],
    *,
    source: str = "",
    providers: Iterable[str] | None = None,
    affinity: float | None = None,
) -> AuditReport:
    """Audit a log: group, canonicalise, compare, classify and price every conversation.
    `contents` is what `read_log` returned, or what `iter_log` yields: then no request is
    held whole, and a conversation's requests go once its findings and costs are made.
    `affinity`: the router's documented affinity window in seconds, where the log went
    through one (a miss after a longer pause, inside the TTL, is the router's); without it
    a window is named only where a conversation's own gaps show one."""
    chosen = list(providers) if providers is not None else None
    skipped: list[str] = []
    refused: list[str] = []
    if isinstance(contents, LogContents):
        skipped.extend(contents.skipped)
    conversations = group(_entries(contents, skipped, refused))
    openings = rewritten_openings(conversations)
    reports = []
    for conversation in conversations:
        opening = openings.get(conversation.number)
        reports.append(_report(conversation, chosen, opening, affinity))
        conversation.entries.clear()  # the report holds what it shows (excerpts, no streams)
    return AuditReport(source, tuple(reports), (*skipped, *refused))


def to_json(report: AuditReport) -> JsonObject:
    """The report as plain JSON-ready data, totals included."""
    conversations: list[JsonData] = []
    for conversation in report.conversations:
        conversations.append(
            {
                "number": conversation.number,
                "label": conversation.label,
                "format": conversation.format,
                "model": conversation.model,
                "profile": conversation.profile,
                "totals": {
                    "requests": len(conversation.findings),
                    "prompt_tokens": conversation.prompt_tokens,
                    "cached_tokens": conversation.cached,
                    "limit_tokens": conversation.limit,
                    "hit_rate": round(conversation.hit_rate, 4),
                    "cached_over_limit": round(conversation.cached_over_limit, 4),
                    "client_busts": len(conversation.busts),
                    "provider_lost": len(conversation.provider_lost),
                    "written_tokens": conversation.written_tokens,
                    "largest_prompt": conversation.largest_prompt,
                    "rewrite_factor": round(conversation.rewrite_factor, 3),
                },
                "requests": [asdict(f) for f in conversation.findings],
                "costs": [
                    {
                        "provider": cost.provider,
                        "actual_usd": cost.actual,
                        "perfect_usd": cost.perfect,
                        "lost_usd": cost.lost,
                        "lost_by_cause_usd": _dollars(cost.lost_by_cause),
                    }
                    for cost in conversation.costs
                ],
            }
        )
    document: JsonObject = {
        "source": report.source,
        "conversations": conversations,
        "lost_by_cause_usd": {
            p: _dollars(by_cause) for p, by_cause in report.lost_by_cause.items()
        },
        "causes": [
            {
                "kind": total.kind,
                "label": total.label,
                "requests": total.requests,
                "resent_tokens": total.resent_tokens,
                "resent_tokens_per_request": round(total.resent_per_request, 1),
                "lost_usd": _dollars(total.lost_usd),
            }
            for total in report.causes
        ],
        "rewrite_factor": round(report.rewrite_factor, 3),
        "skipped": list(report.skipped),
    }
    return {key: _finite(item) for key, item in document.items()}


def _dollars(by_name: Mapping[str, float]) -> JsonObject:
    """Dollars by cause or by provider as a JSON object (a copy: the report keeps its own)."""
    return dict(by_name)


def _finite(value: JsonData) -> JsonData:
    """`value` with every NaN or infinite number as null: JSON has no such numbers, and a
    log's absurd counts (10^400 tokens) must not make the report unreadable. A tuple (what
    `asdict` makes of a finding's tuples) becomes a list, as JSON writes it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value
