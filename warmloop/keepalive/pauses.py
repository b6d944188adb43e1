"""Pauses: keeping the cache warm while a run's tools run, or while an application waits
between runs (`waiting`), as maintenance.

`RunPauses` reads the run's own records of what it sent (`SentRequest`: the payload, when,
its prompt size), keeping no copy of its own; around each step's tool calls it starts a
`Pinger` priced from the model's facts (a keep-alive read against a cold resume's write)
with this tool's earlier durations as the rule's history, stops it when the tools are
done, and records the pause's length for next time. Each keep-alive becomes a
`MaintenanceEvent` with its usage (priced with the run); a failed one becomes a warning.
Nothing is appended to the transcript or stored session. Before each request it picks the
TTL the request is written with (`longer_retention`, from what followed the agent's
earlier requests and runs), and it tells `Learned` where runs end and follow-ups start.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.profiles import CacheProfile, Retention
from warmloop.keepalive.evictions import evicted
from warmloop.keepalive.live_misses import live_miss
from warmloop.keepalive.ping import answer_tokens, per_request, with_cache_ttl
from warmloop.keepalive.pinger import KeepAlivePolicy, Ping, Pinger
from warmloop.keepalive.rule import choose_retention, pause_costs
from warmloop.keepalive.sent import SentRequest
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.maintenance.size import TokenCounter
from warmloop.memory import Learned
from warmloop.messages import AssistantTurn, Meta
from warmloop.providers.base import Model, Rendered
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.schema import ToolSpec
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript
from warmloop.wire.miss_kinds import Miss


@dataclass
class RunPauses:
    """One run's keep-alive state (see the module docstring)."""

    model: Model
    policy: KeepAlivePolicy | None
    learned: Learned
    on_event: Callable[[MaintenanceEvent], None]
    on_warning: Callable[[str], None]
    requests: Sequence[SentRequest] = field(default_factory=list)
    """The run's own records of what it sent (the run appends to them; read here)."""
    first: bool = True
    """This run is its conversation's first (not a follow-up)."""
    refreshed: float | None = None
    """When a keep-alive of this run last read the prefix (the policy's clock)."""
    survived: int = 0
    evicted: int = 0
    """Returns inside the TTL on this conversation that found its model's cache, and that
    found it evicted: those its stored session counted before, then this run's."""
    pingers: list[Pinger] = field(default_factory=list)

    @property
    def last(self) -> SentRequest | None:
        """The run's last request, if it sent one."""
        return self.requests[-1] if self.requests else None

    def sent(self) -> Miss | None:
        """The run appended a request to its records: what it read lowers its model's
        minimum where below it; the gap since the one before is learned, and whether it
        found the cache that one left (an eviction, or not). Returns the miss the live
        guard names where its prefix held yet it read less (`keepalive.live_misses`)."""
        if not self.requests:
            return None
        table = self.model.facts.profile
        current = self.requests[-1]
        if current.record is not None:  # a fact learned whether or not keep-alive is on
            self.learned.cached(table, current.record.usage.cache_read_tokens)
        if self.policy is None:  # no clock: the miss is named without times
            return live_miss(self.learned.profile(table), self.requests, timed=False)
        if len(self.requests) > 1:
            previous = self.requests[-2]
            self.learned.gap(current.at - previous.at)
            found = evicted(previous, current, self.learned.profile(table))
            if found is not None:
                self.learned.returned(table.model, not found)
                self.survived, self.evicted = self.survived + (not found), self.evicted + found
        return live_miss(self.learned.profile(table), self.requests, self.refreshed)

    def learned_meta(self, meta: Meta) -> Meta:
        """`meta` with what this conversation learned of its model's cache (the session
        stores it, and a run that resumes it restores it: `Learned.stored`)."""
        least = self.learned.minimums.get(self.model.facts.profile.model)
        return replace(
            meta, cache_minimum=least, cache_survived=self.survived, cache_evicted=self.evicted
        )

    def started(self, transcript: Transcript) -> None:
        """A follow-up run starts on `transcript`, after an earlier run on it: the gap
        since that run's last request is learned."""
        self.first = False
        last = transcript.meta.last_request_at
        since = max(0.0, time.time() - last) if last else None
        self.learned.followed(transcript.conversation, self.now(), since)

    def finished(self, requests: int, conversation: str) -> None:
        """The run ended with outputs after `requests` requests: learned, as a run that
        may be followed (from its last request, on the keep-alive clock)."""
        last = self.last
        at = last.at if self.policy is not None and last is not None else None
        self.learned.finished(requests, conversation, at, first=self.first)

    def with_retention(
        self, rendered: Rendered, facts: ModelFacts, sent: int
    ) -> tuple[Rendered, str | None]:
        """The request to send, after `sent` of this run, and the TTL it is written with
        (None: the model's own): a longer one where `longer_retention` picks it from what
        this agent saw follow its requests (the gaps within its runs, and the follow-ups
        after their ends, by the chance that this request is its run's last)."""
        if self.policy is None:
            return rendered, None
        chars, last = rendered.length, self.last
        ratio = last.prompt_tokens / last.chars if last is not None and last.chars else 0.25
        written = max(0, chars - last.chars) if last is not None else chars
        profile = self.learned.profile(facts.profile)
        opening = None
        if sent == 0 and self.first:  # a fresh conversation's first request: its opening
            returns = self.learned.opening_returns(profile.retention.seconds)
            self.learned.opened(self.now())
            opening = opening_retention(profile, rendered.wire_format, int(chars * ratio), returns)
        longer = longer_retention(
            self.learned.profile(facts.profile),
            rendered.wire_format,
            int(chars * ratio),
            int(written * ratio),
            self.learned.gaps,
            cold_tokens=last.cold_tokens if last is not None else None,
            follow_ups=self.learned.follow_ups,
            shares=self.learned.outlook(sent, first=self.first),
            survival=self.learned.survival(facts.profile.model),
        )
        if opening is not None and (longer is None or opening.seconds > longer.seconds):
            longer = opening
        if longer is None:
            return rendered, None
        return with_cache_ttl(rendered, longer.name), longer.name

    def now(self) -> float:
        return self.policy.clock() if self.policy is not None else 0.0

    def for_turn(
        self,
        turn: AssistantTurn,
        toolbox: Toolbox,
        facts: ModelFacts,
        transcript: Transcript,
        *,
        extracting: bool,
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """The pause while a turn's tools run, named for its first tool (with the tool's
        `expected_seconds`); none for `submit` alone or the extract step."""
        slow = next((c.name for c in turn.tool_calls if c.name != SUBMIT), None)
        if slow is None or extracting:
            return contextlib.nullcontext()
        found = toolbox.get(slow)
        expected = found.expected_seconds if found is not None else None
        return self.pause(
            f"tool:{slow}", facts, transcript.conversation, transcript.revision, expected
        )

    @contextlib.asynccontextmanager
    async def pause(
        self,
        kind: str,
        facts: ModelFacts,
        session_id: str,
        revision: int,
        expected: float | None = None,
    ) -> AsyncIterator[None]:
        """Keep the cache warm while the body runs (a pause of `kind`), if the rule says so.
        `expected`: a tool's declared duration, the rule's history until it has its own."""
        policy, last = self.policy, self.last
        pinger = None
        if policy is not None and last is not None:
            seen = list(self.learned.pauses[kind])
            history = seen or ([expected] if expected is not None else [])
            pinger = self._pinger(last, history, facts, session_id, revision, policy)
        if pinger is not None:
            pinger.start()
        try:
            yield
        finally:
            if pinger is not None:
                await pinger.stop()
            latest = self.last
            if policy is not None and latest is not None:
                # From the last request: the cache's clock, which the history is read on (a
                # run that resumed a stored step sent none yet: nothing was measured).
                self.learned.paused(kind, self.now() - latest.at)

    def _pinger(
        self,
        last: SentRequest,
        history: list[float],
        facts: ModelFacts,
        session_id: str,
        revision: int,
        policy: KeepAlivePolicy,
    ) -> Pinger | None:
        answer = answer_tokens(last.rendered, facts.profile)  # 0: a prewarm, no output
        prices = facts.prices
        if answer is None:
            return None
        ratio = prices.rates.output / prices.rates.input if prices and prices.rates.input else 0.0
        retention = facts.profile.retention_for(last.ttl) if last.ttl else None
        costs = pause_costs(
            self.learned.profile(facts.profile),
            last.prompt_tokens,
            cold_tokens=last.cold_tokens,
            output_ratio=ratio * answer,
            retention=retention,
            survival=self.learned.survival(facts.profile.model),
        )
        if costs is None:
            return None
        prompt = last.prompt_tokens

        def record(ping: Ping) -> None:
            if ping.usage is None:
                self.on_warning(f"a keep-alive failed and was dropped ({ping.error})")
                return
            usage, self.refreshed = ping.usage, ping.at
            self.on_event(
                MaintenanceEvent("keepalive", "pause", revision, 0, prompt, prompt, usage=usage)
            )

        pinger = Pinger(
            self.model,
            last.rendered,
            session_id,
            costs,
            sent_at=last.at,
            history=history,
            policy=policy,
            on_ping=record,
            profile=facts.profile,
        )
        self.pingers.append(pinger)
        return pinger

    async def settle(self) -> None:
        """Wait for keep-alives still on the wire, so their usage is in the run."""
        for pinger in self.pingers:
            await pinger.settle()


def longer_retention(
    profile: CacheProfile,
    wire_format: str,
    prompt_tokens: int,
    written_tokens: int,
    gaps: Iterable[float],
    *,
    cold_tokens: int | None = None,
    follow_ups: Iterable[float] = (),
    shares: tuple[float, float] | None = None,
    survival: float = 1.0,
) -> Retention | None:
    """The longer TTL a request of `prompt_tokens` (`written_tokens` of them new since the
    run's last request) is written with, or None (the model's own): `choose_retention`
    over the `gaps` seen after earlier requests of a run (waited through) and the
    `follow_ups` seen after runs ended (nobody waiting), weighed by `shares` (see
    `Learned.outlook`), among the retentions a request can carry on its own
    (`per_request`: Anthropic's markers, OpenAI Responses' `prompt_cache_options.ttl`);
    never a retention that is a session's request parameter (OpenAI's `24h`, fixed for
    the session by `free_retention`). `survival`: see `choose_retention`."""
    seen, later = list(gaps), list(follow_ups)
    carried = tuple(r for r in profile.retentions if per_request(wire_format, r.name))
    if not (seen or later) or profile.retention not in carried:
        return None
    choice = choose_retention(
        replace(profile, retentions=carried),
        prompt_tokens,
        written_tokens,
        seen,
        unattended=later,
        shares=shares,
        cold_tokens=cold_tokens,
        survival=survival,
    )
    return None if choice.retention.name == profile.ttl else choice.retention


def opening_retention(
    profile: CacheProfile, wire_format: str, prompt_tokens: int, returns: Sequence[float]
) -> Retention | None:
    """The longer TTL a fresh conversation's first request is written with so that its
    opening (tools, instructions) outlives the wait until this agent's next fresh start
    (`returns`: the waits seen between bursts of them; nobody keeps the entry warm
    meanwhile), or None: `choose_retention` over them, among the retentions a request
    carries on its own. This is the TTL of a sub-agent's opening chosen by when its
    parent sends it again (its next fan-out), and of any agent's opening by when its next
    session starts."""
    carried = tuple(r for r in profile.retentions if per_request(wire_format, r.name))
    if not returns or profile.retention not in carried:
        return None
    choice = choose_retention(
        replace(profile, retentions=carried),
        prompt_tokens,
        prompt_tokens,
        (),
        unattended=returns,
    )
    return None if choice.retention.name == profile.ttl else choice.retention


@dataclass
class Waiting:
    """A wait between runs kept warm (`Agent.waiting`): the keep-alives it sent, as
    maintenance events with their usage, and any that failed."""

    maintenance: list[MaintenanceEvent] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@contextlib.asynccontextmanager
async def waiting(
    model: Model,
    tool_specs: tuple[ToolSpec, ...],
    learned: Learned,
    policy: KeepAlivePolicy | None,
    transcript: Transcript,
    since: float | None = None,
    kind: str = "waiting",
) -> AsyncIterator[Waiting]:
    """Keep `transcript`'s cache warm while the body waits (a human's answer, an
    approval), by the same rule as inside a run, with this agent's earlier waits of `kind`
    as its history. The keep-alive is `transcript` rendered as the next request will send
    it before what is new (for a follow-up, its first one also writes the last turn, which
    the follow-up then reads; for an approval, the request that asked for the call);
    `since`: seconds since the last request (default: from the transcript's
    `last_request_at`)."""
    wait = Waiting()
    if policy is None or not len(transcript):
        yield wait
        return
    if since is None:
        last = transcript.meta.last_request_at
        since = max(0.0, time.time() - last) if last else 0.0
    rendered = model.render(transcript, tool_specs)
    prompt = TokenCounter(model.name).count(rendered.stream)
    start = SentRequest(rendered, policy.clock() - since, prompt)  # what the wait follows
    pauses = RunPauses(
        model, policy, learned, wait.maintenance.append, wait.warnings.append, [start]
    )
    try:
        async with pauses.pause(kind, model.facts, transcript.conversation, 0):
            yield wait
    finally:
        await pauses.settle()
