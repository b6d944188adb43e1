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

What the keep-alives saved: a pause they carried past the TTL saves the miss the rule
priced; every keep-alive's cost counts against it. The clock is injected and `tick()` sends
what is due, so tests drive a pause with a fake clock; `start()` runs a thread that calls
it when the next one is due.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from warmloop.exchange.formats import logged_layout, model_name, model_spec, own_profile
from warmloop.exchange.response_facts import decoded, response_facts
from warmloop.facts.price_table import Prices, prices_for
from warmloop.facts.pricing import cost
from warmloop.facts.usage import Usage
from warmloop.keepalive.ping import answer_tokens, keepalive_request
from warmloop.keepalive.rule import PauseCosts, keep_alive, pause_costs
from warmloop.providers.base import Rendered
from warmloop.providers.records import WireFormat
from warmloop.proxy.conversations import IDLE_SECONDS
from warmloop.wire.stream import canonical_stream

logger = logging.getLogger("warmloop.proxy")

CONVERSATION_CAP_USD = 0.50
"""Keep-alives one conversation may spend, by default (`--keepalive-cap`)."""
DAILY_CAP_USD = 5.00
"""Keep-alives the proxy may spend in a UTC day, by default (`--keepalive-daily-cap`)."""
HISTORY = 20
"""A conversation's pause lengths kept as the rule's history (the latest)."""


@dataclass(frozen=True)
class Caps:
    """What keep-alives may spend: per conversation and per UTC day (dollars)."""

    conversation_usd: float = CONVERSATION_CAP_USD
    daily_usd: float = DAILY_CAP_USD


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
    sent: int = 0


@dataclass
class Tally:
    """A conversation's keep-alives: sent, their cost, what they saved (net of it), and
    its earlier pause lengths (the rule's history)."""

    sent: int = 0
    spent_usd: float = 0.0
    saved_usd: float = 0.0
    history: list[float] = field(default_factory=list)
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
        self._day: tuple[int, float] = (0, 0.0)  # (UTC day number, dollars spent in it)
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
    ) -> None:
        """`conversation`'s request (`body` as it went upstream, with `headers`, written
        for `ttl`; None: the model's own) was answered with `usage`: a pause starts, kept
        warm where the rule says it pays."""
        pause = self._pause(wire, url, headers, body, path, usage, ttl)
        with self._lock:
            if self._closed:
                return
            self._drop(conversation)
            tally = self._tallies.setdefault(conversation, Tally())
            tally.pause = pause
            tally.last = (usage.prompt_tokens, len(body))
            if pause is not None:
                self._pauses[conversation] = pause
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
            request = json.loads(body)
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
        sent = json.dumps(ping.payload, ensure_ascii=False, separators=(",", ":")).encode()
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
            carried = now - pause.started >= pause.costs.ttl > now - pause.last_use
            if pause.sent and carried:
                tally.saved_usd += _usd(pause.costs.miss, pause.prices)

    def forget(self, conversation: str) -> None:
        """`conversation` is forgotten (idle, or past the limit): so is its pause."""
        with self._lock:
            self._drop(conversation)
            self._tallies.pop(conversation, None)

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
        """Send every keep-alive that is due now and the rule pays for; drop the pauses it
        no longer does. Returns how many were sent."""
        sent = 0
        for conversation, pause, headers, body in self._due():
            if self._send(conversation, pause, headers, body):
                sent += 1
        return sent

    def _due(self) -> list[tuple[str, _Pause, list[tuple[str, str]], bytes]]:
        with self._lock:
            now = self.clock()
            due = []
            for conversation, pause in list(self._pauses.items()):
                if now < pause.last_use + pause.costs.interval:
                    continue
                tally = self._tallies[conversation]
                gone = now >= pause.last_use + pause.costs.ttl  # a late tick: a full write now
                idle = now - pause.started >= self.idle_seconds
                if gone or idle or not keep_alive(pause.costs, pause.sent, tally.history):
                    self._drop(conversation)
                    continue
                estimate = _usd(pause.costs.ping, pause.prices)
                capped = self._capped(tally, estimate, now)
                if capped is not None:
                    self._drop(conversation)
                    self.warn(f"no keep-alive for {conversation}: {capped}")
                    continue
                self._spend(conversation, estimate)  # held, so the next pause sees it
                pause.sent += 1
                pause.last_use = now
                due.append((conversation, pause, list(pause.headers), pause.body))
            return due

    def _capped(self, tally: Tally, estimate: float, now: float) -> str | None:
        day, spent = self._day
        today = int(now // 86400)
        if today != day:
            self._day = (today, 0.0)
            spent = 0.0
        if tally.spent_usd + estimate > self.caps.conversation_usd:
            return f"its keep-alives would pass the ${self.caps.conversation_usd:.2f} cap"
        if spent + estimate > self.caps.daily_usd:
            return f"today's keep-alives would pass the ${self.caps.daily_usd:.2f} daily cap"
        return None

    def _send(
        self, conversation: str, pause: _Pause, headers: list[tuple[str, str]], body: bytes
    ) -> bool:
        """Send one keep-alive (outside the lock); a refused or failed one ends the pause."""
        try:
            response = self.client.post(
                pause.url,
                headers=headers,
                content=body,
                timeout=pause.costs.interval,
            )
        except httpx2.HTTPError as exc:
            self._failed(conversation, pause, f"{type(exc).__name__}: {exc}")
            return False
        estimate = _usd(pause.costs.ping, pause.prices)
        if response.status_code >= 400:
            self._failed(conversation, pause, f"the upstream answered {response.status_code}")
            return False
        encoding = response.headers.get("content-encoding", "")
        content_type = response.headers.get("content-type", "")
        facts = response_facts(decoded(response.content, encoding), content_type)
        usage = _usage(pause.wire, facts.usage)
        spent = estimate if usage is None else cost(usage, pause.prices)
        with self._lock:
            tally = self._tallies.get(conversation)
            if tally is not None:
                tally.sent += 1
            self._spend(conversation, spent - estimate)  # the estimate was held at `_due`
        return True

    def _spend(self, conversation: str, usd: float) -> None:
        """Count `usd` against `conversation`'s keep-alives and today's (under the lock)."""
        tally = self._tallies.get(conversation)
        if tally is not None:
            tally.spent_usd += usd
            tally.saved_usd -= usd
        day, before = self._day
        self._day = (day, before + usd)

    def _failed(self, conversation: str, pause: _Pause, why: str) -> None:
        with self._lock:
            self._spend(conversation, -_usd(pause.costs.ping, pause.prices))  # not billed
            if self._pauses.get(conversation) is pause:
                self._drop(conversation)
        self.warn(f"a keep-alive for {conversation} failed ({why}); no more in this pause")

    def wake(self) -> None:
        """Have the thread look at the clock again (a test's fake clock moved)."""
        with self._lock:
            self._lock.notify_all()

    def start(self) -> None:
        """Send keep-alives from a thread of their own, each when it is due."""
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
            self.tick()

    def close(self) -> None:
        """Stop sending, and drop every pause's headers."""
        with self._lock:
            self._closed = True
            for conversation in list(self._pauses):
                self._drop(conversation)
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join()

    def figures(self, conversation: str) -> Mapping[str, Any]:
        """`conversation`'s keep-alive figures for the status page."""
        tally = self.tally(conversation)
        return {
            "keepalives": tally.sent,
            "keepalive_usd": round(tally.spent_usd, 6),
            "keepalive_saved_usd": round(tally.saved_usd, 6),
        }


def _usd(base_tokens: float, prices: Prices) -> float:
    """Base-input tokens (the rule's unit) in dollars."""
    return cost(Usage(input_tokens=max(0, round(base_tokens))), prices)


def _usage(wire: WireFormat, raw: Mapping[str, Any] | None) -> Usage | None:
    if raw is None or wire.read_usage is None:
        return None
    return wire.read_usage(dict(raw))
