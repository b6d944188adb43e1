"""Keeping one conversation's cache warm through one pause: a task beside the pause.

The pinger sleeps until the cache would expire (an `interval` after the last request or
keep-alive), asks the rule (`keepalive.keep_alive`) whether one more keep-alive pays, and
sends it: the last request's exact payload with a minimal answer, or none where the model
prewarms (`keepalive.ping`).
It runs as its own asyncio task, so it never delays the tool or the next request.

A keep-alive is never worth waiting for: its answer is a token, and a server that never
answers it would hold the run (or the end of `Agent.waiting`) for the SDK's timeout and
retries, ten minutes and more. So one waits for its answer at most the `interval` it keeps
(after that the next one would be due), and stopping the pinger (the pause is over: the
run needs the connection, or it ends) cancels its sleep and any keep-alive still on the
wire; a cancelled one is reported as dropped. A keep-alive that fails is logged and
reported, never raised. Time is injected (`clock`, `sleep`), so tests fake it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from warmloop.facts.profiles import CacheProfile
from warmloop.facts.usage import Usage
from warmloop.keepalive.ping import keepalive_request
from warmloop.keepalive.rule import PauseCosts, keep_alive
from warmloop.providers.base import Model, Rendered

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class KeepAlivePolicy:
    """Whether and how an agent keeps its cache warm through pauses. `clock` (seconds) and
    `sleep` are injectable, so a test can fake an eight-minute tool without waiting."""

    clock: Clock = field(default=time.monotonic)
    sleep: Sleep = field(default=asyncio.sleep)


@dataclass(frozen=True)
class Ping:
    """One keep-alive sent: when (on the policy's clock), its usage, or the error that
    stopped it (then `usage` is None)."""

    at: float
    usage: Usage | None
    error: str = ""


class Pinger:
    """Keeps one conversation warm through one pause (see the module docstring)."""

    def __init__(
        self,
        model: Model,
        last: Rendered,
        session_id: str,
        costs: PauseCosts,
        *,
        sent_at: float,
        history: Sequence[float] = (),
        policy: KeepAlivePolicy,
        on_ping: Callable[[Ping], None],
        profile: CacheProfile | None = None,
    ) -> None:
        request = keepalive_request(last, profile)  # a prewarm where `profile` takes one
        self.request = request
        self.model = model
        self.session_id = session_id
        self.costs = costs
        self.last_use = sent_at
        self.history = tuple(history)
        self.policy = policy
        self.on_ping = on_ping
        self.sent = 0
        self._task: asyncio.Task[None] | None = None
        self._in_flight: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Begin watching the pause (a no-op where the format has no keep-alive)."""
        if self.request is not None and self._task is None:
            self._task = asyncio.create_task(self._watch(), name="warmloop-keepalive")

    async def _watch(self) -> None:
        policy = self.policy
        while keep_alive(self.costs, self.sent, self.history):
            due = self.last_use + self.costs.interval
            wait = due - policy.clock()
            if wait > 0:
                await policy.sleep(wait)
            if policy.clock() >= self.last_use + self.costs.ttl:
                return  # already gone (a late start): a keep-alive now would be a full write
            self.sent += 1
            self.last_use = policy.clock()
            ping = asyncio.create_task(self._ping(self.last_use))
            self._in_flight.add(ping)
            ping.add_done_callback(self._in_flight.discard)
            await asyncio.shield(ping)

    async def _ping(self, at: float) -> None:
        assert self.request is not None
        try:
            async with asyncio.timeout(self.costs.interval):
                response = await self.model.send(self.request, session_id=self.session_id)
        except asyncio.CancelledError:
            self.on_ping(Ping(at, None, "cancelled: the pause ended before its answer"))
            raise
        except TimeoutError:
            seconds = f"{self.costs.interval:.0f}"
            logger.warning("keep-alive unanswered after %s s; dropped", seconds)
            self.on_ping(Ping(at, None, f"no answer within the {seconds} s it keeps the cache"))
            return
        except Exception as exc:  # a keep-alive never fails the run
            logger.warning("keep-alive failed (%s: %s); the run goes on", type(exc).__name__, exc)
            self.on_ping(Ping(at, None, f"{type(exc).__name__}: {exc}"))
            return
        self.on_ping(Ping(at, response.usage))

    async def stop(self) -> None:
        """The pause is over: stop watching, and cancel a keep-alive still on the wire
        (the run goes on without waiting for its answer)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        pings = list(self._in_flight)
        for ping in pings:
            ping.cancel()
        if pings:
            await asyncio.gather(*pings, return_exceptions=True)

    async def settle(self) -> None:
        """Wait for keep-alives still on the wire (their usage is recorded); after `stop`
        there are none."""
        if self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
