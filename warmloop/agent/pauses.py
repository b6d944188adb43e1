"""A run's pauses: keeping the cache warm while its tools run, as maintenance.

`RunPauses` remembers the last request sent (its payload, when, its prompt size); around
each step's tool calls it starts a `Pinger` priced from the model's facts (a keep-alive
read against a cold resume's write) with this tool's earlier durations as the rule's
history, stops it when the tools are done, and records the pause's length for next time.
Each keep-alive becomes a `MaintenanceEvent` with its usage (priced with the run); a
failed one becomes a warning. Nothing is appended to the transcript or stored session.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from warmloop.agent.learned import Learned
from warmloop.cache.facts import ModelFacts
from warmloop.maintenance.keepalive import pause_costs
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.maintenance.pinger import KeepAlivePolicy, Ping, Pinger
from warmloop.providers.base import Model, Rendered
from warmloop.providers.keepalive import answer_tokens


@dataclass
class RunPauses:
    """One run's keep-alive state (see the module docstring)."""

    model: Model
    policy: KeepAlivePolicy | None
    learned: Learned
    on_event: Callable[[MaintenanceEvent], None]
    on_warning: Callable[[str], None]
    last: Rendered | None = None
    last_at: float = 0.0
    last_prompt: int = 0
    pingers: list[Pinger] = field(default_factory=list)

    def sent(self, rendered: Rendered, at: float, prompt_tokens: int) -> None:
        """A request went out at `at` (the policy's clock) with `prompt_tokens`."""
        self.last, self.last_at, self.last_prompt = rendered, at, prompt_tokens

    def now(self) -> float:
        return self.policy.clock() if self.policy is not None else 0.0

    @contextlib.asynccontextmanager
    async def pause(
        self, kind: str, facts: ModelFacts, session_id: str, revision: int
    ) -> AsyncIterator[None]:
        """Keep the cache warm while the body runs (a pause of `kind`), if the rule says so."""
        policy, last = self.policy, self.last
        pinger = None
        if policy is not None and last is not None:
            pinger = self._pinger(last, kind, facts, session_id, revision, policy)
        if pinger is not None:
            pinger.start()
        try:
            yield
        finally:
            if pinger is not None:
                await pinger.stop()
            if policy is not None:
                # From the last request: the cache's clock, which the history is read on.
                self.learned.paused(kind, self.now() - self.last_at)

    def _pinger(
        self,
        last: Rendered,
        kind: str,
        facts: ModelFacts,
        session_id: str,
        revision: int,
        policy: KeepAlivePolicy,
    ) -> Pinger | None:
        answer = answer_tokens(last)
        prices = facts.prices
        if answer is None:
            return None
        ratio = prices.rates.output / prices.rates.input if prices and prices.rates.input else 0.0
        costs = pause_costs(facts.profile, self.last_prompt, output_ratio=ratio * answer)
        if costs is None:
            return None
        prompt = self.last_prompt

        def record(ping: Ping) -> None:
            if ping.usage is None:
                self.on_warning(f"a keep-alive failed and was dropped ({ping.error})")
                return
            usage = ping.usage
            self.on_event(
                MaintenanceEvent("keepalive", "pause", revision, 0, prompt, prompt, usage=usage)
            )

        pinger = Pinger(
            self.model,
            last,
            session_id,
            costs,
            sent_at=self.last_at,
            history=list(self.learned.pauses[kind]),
            policy=policy,
            on_ping=record,
        )
        self.pingers.append(pinger)
        return pinger

    async def settle(self) -> None:
        """Wait for keep-alives still on the wire, so their usage is in the run."""
        for pinger in self.pingers:
            await pinger.settle()
