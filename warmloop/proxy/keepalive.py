"""The proxy's keep-alive: keeping a conversation's cache warm while its client is away.

When a conversation's request has been answered and no new one has come (a tool that runs
for minutes, a human's approval), `KeepAlives` makes the decision the agent makes
(`keepalive.rule`): it prices the pause (`pause_costs`: a keep-alive's read against a cold
resume's write; None, so never pinged, on caches with no TTL or one of hours), and at each
moment the cache would expire asks `keep_alive` whether one more keep-alive pays, with the
conversation's earlier pauses as the rule's history. A keep-alive is the last request as it
went upstream, with the smallest answer or, where the model prewarms, OpenAI's
`prompt_cache_options.prewarm` (`keepalive.ping`).

It goes with the client's own headers (its API key): held in memory only, for that
conversation's pause only, and dropped when the pause ends (a request comes, the rule
stops, a keep-alive is refused), when the conversation is forgotten, or when the proxy
closes; never logged or written. A model without prices in the table is never pinged
(nothing to price the decision with; a self-hosted engine's model is such a one), and two
caps bound the spend: per conversation and per UTC day, each a keep-alive's estimated cost
checked before it goes.

Which history the rule weighs (`proxy.returns`): a conversation's own earlier pauses of the
same kind (after a tool call, after a finished turn), else what the proxy has seen of other
conversations' pauses of that kind, where one that never came back counts as endless: so
one-shot jobs stop costing keep-alives after the first few, and the keep-alives priced on
that population (a conversation that has not yet come back) may spend at most
`UNPROVEN_SHARE` of the daily cap, so they never starve the sessions that do come back.

Keep-alives go out on a bounded pool of threads (`proxy.ping_pool`), each within a deadline and
a bound on its answer's bytes, so a stalled, endless or gzip-bomb answer holds one worker
for one deadline at most and never another conversation's keep-alive; `close()` waits a
bounded time.

What the keep-alives saved: a pause they carried past the TTL saves the miss the rule
priced; every keep-alive's cost counts against it. The clock is injected and `tick()` sends
what is due (and waits for those), so tests drive a pause with a fake clock; `start()` runs
a thread that hands each one to the pool when it is due.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from warmloop.errors import ConfigurationError
from warmloop.exchange import json_body
from warmloop.exchange.formats import logged_layout, model_name, model_spec, own_profile
from warmloop.facts.price_table import Prices, prices_for
from warmloop.facts.pricing import cost
from warmloop.facts.usage import Usage
from warmloop.keepalive.ping import answer_tokens, keepalive_request
from warmloop.keepalive.rule import PauseCosts, keep_alive, pause_costs
from warmloop.providers.base import Rendered
from warmloop.providers.records import WireFormat
from warmloop.proxy.conversations import IDLE_SECONDS
from warmloop.proxy.ping_pool import ANSWER_SECONDS, Pool, fetch
from warmloop.proxy.returns import TURN, Returns
from warmloop.wire.stream import canonical_stream

logger = logging.getLogger("warmloop.proxy")

CONVERSATION_CAP_USD = 0.50
"""Keep-alives one conversation may spend, by default (`--keepalive-cap`)."""
DAILY_CAP_USD = 5.00
"""Keep-alives the proxy may spend in a UTC day, by default (`--keepalive-daily-cap`)."""
HISTORY = 20
"""A conversation's pause lengths kept as the rule's history (the latest)."""
UNPROVEN_SHARE = 0.5
"""The share of the daily cap keep-alives may spend on conversations priced by others'
pauses (none of their own of that kind yet): the rest is kept for those that came back."""


@dataclass(frozen=True)
class Caps:
    """What keep-alives may spend: per conversation and per UTC day (dollars), each a
    finite amount above zero (`--no-keepalive` sends none)."""

    conversation_usd: float = CONVERSATION_CAP_USD
    daily_usd: float = DAILY_CAP_USD
    unproven_share: float = UNPROVEN_SHARE
    """The share of `daily_usd` conversations that have not come back may spend."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.unproven_share <= 1.0:
            raise ConfigurationError(
                f"the unproven share must be within 0 and 1, got {self.unproven_share!r}"
            )
        for name, value in (
            ("--keepalive-cap", self.conversation_usd),
            ("--keepalive-daily-cap", self.daily_usd),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"{name} must be a number of dollars, got {value!r}")
            if not math.isfinite(value) or value <= 0:
                raise ConfigurationError(
                    f"{name} must be a finite number of dollars above 0, got {value!r}; "
                    "pass --no-keepalive to send none"
                )


@dataclass
class _Pause:
    """One conversation's pause: what a keep-alive sends (the client's headers among it,
    in memory only), its prices and clock."""

    url: httpx2.URL = field(repr=False)
    headers: list[tuple[str, str]] = field(repr=False)
    body: bytes = field(repr=False)
    wire: WireFormat
    prices: Prices
    costs: PauseCosts
    last_use: float
    """When the cache was last read or written (the answer, then each keep-alive)."""
    started: float
    kind: str = TURN
    """After a tool call or a finished turn (`proxy.returns`)."""
    agent: Hashable = None
    """Whose pause it is: the conversation's system prompt (`exchange.identity.opening`)."""
    sent: int = 0


@dataclass
class Tally:
    """A conversation's keep-alives: sent, their cost, what they saved (net of it), and
    its earlier pause lengths (the rule's history)."""

    sent: int = 0
    spent_usd: float = 0.0
    saved_usd: float = 0.0
    history: list[float] = field(default_factory=list)
    own: dict[str, list[float]] = field(default_factory=dict)
    """Its earlier pause lengths by kind (`proxy.returns`): the rule's history for the
    next pause of that kind."""
    pause: _Pause | None = field(default=None, repr=False)
    """The latest pause (its headers dropped once it is no longer kept)."""
    last: tuple[int, int] | None = None
    """The last answered request's prompt tokens and body bytes."""


class KeepAlives:
    """The proxy's keep-alives, one pause per conversation (see the module docstring);
    safe across the server's threads."""

    def __init__(
        self,
        client: httpx2.Client,
        clock: Callable[[], float],
        caps: Caps,
        warn: Callable[[str], None],
        *,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self.client = client
        self.idle_seconds = idle_seconds
        """A pause this old is dropped, headers and all, as its conversation is."""
        self.clock = clock
        self.caps = caps
        self.warn = warn
        self._lock = threading.Condition()
        self._pauses: dict[str, _Pause] = {}
        self._tallies: dict[str, Tally] = {}
        self._day: tuple[int, float, float] = (0, 0.0, 0.0)
        """(UTC day number, dollars spent in it, of which on unproven conversations)."""
        self._returns = Returns()
        self._pool = Pool()
        self.deadline = ANSWER_SECONDS
        """The most one keep-alive's exchange may take (`ping_pool.fetch`)."""
        self.population = True
        """Whether a conversation with no pauses of its own is priced by others' (False:
        by the rent-or-buy rule alone, as before issue 46; for a benchmark's comparison)."""
        self._thread: threading.Thread | None = None
        self._closed = False

    def holds(self, conversation: str) -> bool:
        """Whether a pause (and so the client's headers) is held for `conversation`."""
        with self._lock:
            return conversation in self._pauses

    def tally(self, conversation: str) -> Tally:
        """A copy of `conversation`'s keep-alive figures."""
        with self._lock:
            found = self._tallies.get(conversation, Tally())
            history = list(found.history)
            return Tally(found.sent, found.spent_usd, found.saved_usd, history, last=found.last)

    def paused(
        self,
        conversation: str,
        wire: WireFormat,
        url: httpx2.URL,
        headers: list[tuple[str, str]],
        body: bytes,
        path: str,
        usage: Usage,
        ttl: str | None = None,
        kind: str = TURN,
        agent: Hashable = None,
    ) -> None:
        """`conversation`'s request (`body` as it went upstream, with `headers`, written
        for `ttl`; None: the model's own) was answered with `usage`: a pause of `kind`
        (`proxy.returns`) of the conversation of `agent` starts, kept warm where the rule
        says it pays."""
        pause = self._pause(wire, url, headers, body, path, usage, ttl)
        with self._lock:
            if self._closed:
                return
            self._drop(conversation)
            tally = self._tallies.setdefault(conversation, Tally())
            tally.pause = pause
            tally.last = (usage.prompt_tokens, len(body))
            if pause is not None:
                pause.kind, pause.agent = kind, agent
                self._pauses[conversation] = pause
                self._returns.opened(conversation, agent, kind, pause.started)
                self._lock.notify_all()

    def _pause(
        self,
        wire: WireFormat,
        url: httpx2.URL,
        headers: list[tuple[str, str]],
        body: bytes,
        path: str,
        usage: Usage,
        ttl: str | None,
    ) -> _Pause | None:
        try:
            request = json_body.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(request, dict):
            return None
        model = model_name(request, path)
        prices = prices_for(model_spec(wire, model))
        profile = own_profile(wire, model)
        layout = logged_layout(wire)
        rendered = Rendered(request, lambda p: canonical_stream(p, layout), wire_format=wire.name)
        answer = answer_tokens(rendered, profile)
        ping = keepalive_request(rendered, profile)
        if prices is None or answer is None or ping is None or not prices.rates.input:
            return None
        ratio = prices.rates.output / prices.rates.input
        retention = profile.retention_for(ttl) if ttl is not None else None
        costs = pause_costs(
            profile, usage.prompt_tokens, output_ratio=ratio * answer, retention=retention
        )
        if costs is None:
            return None
        sent = json_body.dumps(ping.payload)
        now = self.clock()
        return _Pause(url, headers, sent, wire, prices, costs, now, now)

    def resumed(self, conversation: str) -> None:
        """A request came for `conversation`: its pause is over (the headers dropped). A
        pause the keep-alives carried past the TTL saved the miss the rule priced."""
        with self._lock:
            self._drop(conversation)
            tally = self._tallies.get(conversation)
            pause = tally.pause if tally is not None else None
            if tally is None or pause is None:
                return
            tally.pause = None
            now = self.clock()
            tally.history = [*tally.history, now - pause.started][-HISTORY:]
            own = tally.own.setdefault(pause.kind, [])
            tally.own[pause.kind] = [*own, now - pause.started][-HISTORY:]
            self._returns.returned(conversation, now)
            carried = now - pause.started >= pause.costs.ttl > now - pause.last_use
            if pause.sent and carried:
                tally.saved_usd += _usd(pause.costs.miss, pause.prices)

    def forget(self, conversation: str) -> None:
        """`conversation` is forgotten (idle, or past the limit): so is its pause."""
        with self._lock:
            self._drop(conversation)
            self._tallies.pop(conversation, None)
            self._returns.abandoned(conversation)

    def _drop(self, conversation: str) -> None:
        """Stop keeping `conversation`'s pause and drop the client's headers (under the
        lock)."""
        pause = self._pauses.pop(conversation, None)
        if pause is not None:
            pause.headers = []
            pause.body = b""
            pause.url = pause.url.copy_with(query=None)  # Gemini's `?key=`

    def due(self) -> float | None:
        """When the next keep-alive is due (on the clock), or None when none is held."""
        with self._lock:
            return min((p.last_use + p.costs.interval for p in self._pauses.values()), default=None)

    def tick(self) -> int:
        """Send every keep-alive that is due now and the rule pays for, and wait for their
        answers (each within its deadline); drop the pauses it no longer pays for. Returns
        how many were sent."""
        sent = [0]

        def counted(job: Callable[[], bool]) -> Callable[[], None]:
            def run() -> None:
                if job():
                    with self._lock:
                        sent[0] += 1

            return run

        waits = [self._pool.submit(counted(job)) for job in self._due()]
        for done in waits:
            done.wait(2 * self.deadline)
        return sent[0]

    def _dispatch(self) -> None:
        """Hand every keep-alive due now to the pool, waiting for none."""
        for job in self._due():
            self._pool.submit(_discarding(job))

    def _due(self) -> list[Callable[[], bool]]:
        """The keep-alives to send now, each as a job (outside the lock) that says whether
        it went out."""
        with self._lock:
            now = self.clock()
            due: list[Callable[[], bool]] = []
            for conversation, pause in list(self._pauses.items()):
                if now < pause.last_use + pause.costs.interval:
                    continue
                if not self._pays(conversation, pause, now):
                    continue
                pause.sent += 1
                pause.last_use = now
                headers, body = list(pause.headers), pause.body

                def job(
                    c: str = conversation, p: _Pause = pause, h: Any = headers, b: bytes = body
                ) -> bool:
                    return self._send(c, p, h, b)

                due.append(job)
            return due

    def _pays(self, conversation: str, pause: _Pause, now: float) -> bool:
        """Whether one more keep-alive for `pause` pays and fits the caps (under the lock);
        a pause it no longer pays for is dropped. Its estimate is held as spent."""
        tally = self._tallies[conversation]
        gone = now >= pause.last_use + pause.costs.ttl  # a late tick: a full write now
        idle = now - pause.started >= self.idle_seconds
        own = tally.own.get(pause.kind, [])
        elapsed = (pause.sent + 1) * pause.costs.interval
        history = own or (
            self._returns.history(
                pause.agent, pause.kind, conversation, now, (elapsed, pause.costs.ttl)
            )
            if self.population
            else []
        )
        if gone or idle or not keep_alive(pause.costs, pause.sent, history):
            self._drop(conversation)
            return False
        estimate = _usd(pause.costs.ping, pause.prices)
        capped = self._capped(tally, estimate, now, proven=bool(own))
        if capped is not None:
            self._drop(conversation)
            self.warn(f"no keep-alive for {conversation}: {capped}")
            return False
        self._spend(conversation, estimate, proven=bool(own))  # held, so the next sees it
        return True

    def _capped(self, tally: Tally, estimate: float, now: float, proven: bool) -> str | None:
        day, spent, unproven = self._day
        today = int(now // 86400)
        if today != day:
            self._day = (today, 0.0, 0.0)
            spent = unproven = 0.0
        if tally.spent_usd + estimate > self.caps.conversation_usd:
            return f"its keep-alives would pass the ${self.caps.conversation_usd:.2f} cap"
        if spent + estimate > self.caps.daily_usd:
            return f"today's keep-alives would pass the ${self.caps.daily_usd:.2f} daily cap"
        share = self.caps.unproven_share * self.caps.daily_usd
        if not proven and unproven + estimate > share:
            return (
                f"keep-alives for conversations that have not come back would pass "
                f"${share:.2f} today (the rest of the daily cap is kept for those that do)"
            )
        return None

    def _send(
        self, conversation: str, pause: _Pause, headers: list[tuple[str, str]], body: bytes
    ) -> bool:
        """Send one keep-alive (on a worker, outside the lock); a refused or failed one
        ends the pause."""
        try:
            answer = fetch(self.client, pause.url, headers, body, deadline=self.deadline)
        except httpx2.HTTPError as exc:
            self._failed(conversation, pause, f"{type(exc).__name__}: {exc}")
            return False
        estimate = _usd(pause.costs.ping, pause.prices)
        if answer.status >= 400:
            self._failed(conversation, pause, f"the upstream answered {answer.status}")
            return False
        if answer.cut and not self._closed:
            self.warn(
                f"the answer to a keep-alive for {conversation} passed what is read of one "
                "(its size or its time); read no further"
            )
        usage = _usage(pause.wire, answer.facts.usage)
        spent = estimate if usage is None else cost(usage, pause.prices)
        with self._lock:
            tally = self._tallies.get(conversation)
            if tally is not None:
                tally.sent += 1
            proven = tally is not None and bool(tally.own.get(pause.kind))
            self._spend(conversation, spent - estimate, proven)  # held at `_due`
        return True

    def _spend(self, conversation: str, usd: float, proven: bool = True) -> None:
        """Count `usd` against `conversation`'s keep-alives and today's (under the lock)."""
        tally = self._tallies.get(conversation)
        if tally is not None:
            tally.spent_usd += usd
            tally.saved_usd -= usd
        day, before, unproven = self._day
        self._day = (day, before + usd, unproven + (0.0 if proven else usd))

    def _failed(self, conversation: str, pause: _Pause, why: str) -> None:
        with self._lock:
            tally = self._tallies.get(conversation)
            proven = tally is not None and bool(tally.own.get(pause.kind))
            refund = -_usd(pause.costs.ping, pause.prices)
            self._spend(conversation, refund, proven)  # not billed
            if self._pauses.get(conversation) is pause:
                self._drop(conversation)
            closed = self._closed
        if not closed:
            self.warn(f"a keep-alive for {conversation} failed ({why}); no more in this pause")

    def wake(self) -> None:
        """Have the thread look at the clock again (a test's fake clock moved)."""
        with self._lock:
            self._lock.notify_all()

    def start(self) -> None:
        """Hand keep-alives to the pool from a thread of their own, each when it is due."""
        self._thread = threading.Thread(target=self._run, daemon=True, name="warmloop-keepalive")
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                due = self.due()
                wait = None if due is None else max(0.0, due - self.clock())
                if wait is None or wait > 0:
                    self._lock.wait(wait)
                    continue
            self._dispatch()

    def close(self) -> None:
        """Stop sending, drop every pause's headers, and wait a bounded time for the
        keep-alives in flight (`ping_pool.CLOSE_SECONDS`)."""
        with self._lock:
            self._closed = True
            for conversation in list(self._pauses):
                self._drop(conversation)
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join()
        self._pool.close()

    def figures(self, conversation: str) -> Mapping[str, Any]:
        """`conversation`'s keep-alive figures for the status page."""
        tally = self.tally(conversation)
        return {
            "keepalives": tally.sent,
            "keepalive_usd": round(tally.spent_usd, 6),
            "keepalive_saved_usd": round(tally.saved_usd, 6),
        }


def _discarding(job: Callable[[], bool]) -> Callable[[], None]:
    """`job` run for its effect (the pool's jobs return nothing)."""

    def run() -> None:
        job()

    return run


def _usd(base_tokens: float, prices: Prices) -> float:
    """Base-input tokens (the rule's unit) in dollars."""
    return cost(Usage(input_tokens=max(0, round(base_tokens))), prices)


def _usage(wire: WireFormat, raw: Mapping[str, Any] | None) -> Usage | None:
    if raw is None or wire.read_usage is None:
        return None
    return wire.read_usage(dict(raw))
