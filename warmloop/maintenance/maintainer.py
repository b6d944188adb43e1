"""Maintenance at run time: measure each request, ask the planner before the next one, and
carry out its decision (prune, then fold if still over the trigger).

The maintainer never changes the run's conversation: it returns a plan, a list of
`Change`s, each a rewrite already applied to a scratch copy with what it replaced. The run
stores each (a session writes the rewrite and archives the originals in one transaction)
and only then adopts it, so a failure leaves the conversation as it was.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from warmloop.errors import ProviderError
from warmloop.facts.profiles import CacheProfile
from warmloop.facts.usage import Usage
from warmloop.maintenance.fold import fold_span, summarise
from warmloop.maintenance.planner import (
    Decision,
    MaintenancePolicy,
    Reason,
    Situation,
    decide,
    held_price,
)
from warmloop.maintenance.prune import PrunePlan
from warmloop.maintenance.prune_index import PruneIndex
from warmloop.maintenance.size import PromptSizer, TokenCounter
from warmloop.messages import AssistantTurn, Rewrite, ToolResult
from warmloop.providers.base import Model, Rendered
from warmloop.tools.invoke import cap_text
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript, scratch_copy


@dataclass(frozen=True)
class MaintenanceEvent:
    """One rewrite: what it was, why, how many messages it touched, the prompt size before
    and after (estimated tokens), the planner's prediction in base-input tokens, and the
    fold's own request usage."""

    kind: Literal["prune", "fold", "cut", "keepalive"]
    reason: Reason
    revision: int
    messages: int
    tokens_before: int
    tokens_after: int
    predicted_cost: float = 0.0
    predicted_saving: float = 0.0
    usage: Usage | None = None

    def describe(self) -> str:
        """One line for people."""
        if self.kind == "keepalive":
            read = self.usage.cache_read_tokens if self.usage is not None else 0
            return (
                f"keep-alive during a pause: the cache of about {self.tokens_before:,} prompt "
                f"tokens refreshed ({read:,} read from the cache); nothing appended"
            )
        what = {
            "prune": f"pruned {self.messages} tool results",
            "fold": f"folded {self.messages} messages into a summary",
            "cut": f"cut {self.messages} new tool results to the window's share",
        }[self.kind]
        why = {
            "trigger": "the prompt reached the compaction trigger",
            "cold": "the cache had gone cold",
            "pays": "the saving over the remaining steps exceeds the cost",
            "overflow": "the provider rejected the prompt as too long",
        }.get(self.reason, self.reason)
        return (
            f"{what} ({why}): about {self.tokens_before:,} -> {self.tokens_after:,} prompt "
            f"tokens; predicted cost {self.predicted_cost:,.0f}, saving "
            f"{self.predicted_saving:,.0f} (base-input tokens)"
        )


@dataclass(frozen=True)
class Change:
    """One rewrite of a plan: the rewritten conversation (a scratch copy; the run adopts
    it once stored), the `Rewrite` (what was replaced or folded: the archive's rows) and
    the event that reports it."""

    transcript: Transcript
    rewrite: Rewrite
    event: MaintenanceEvent


class Maintainer:
    """One run's maintenance: sizes, the excess paid on prunable content, fold pauses."""

    def __init__(
        self,
        model: Model,
        tools: Sequence[ToolSpec],
        profile: CacheProfile,
        policy: MaintenancePolicy,
        *,
        window: int | None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.profile = profile
        self.policy = policy
        self.window = window
        """Prompt tokens that fit, when known (None: only assumed, never acted on)."""
        self.prune_policy = policy.prune.for_window(window)
        self.counter = TokenCounter(model.name)
        self.sizer = PromptSizer(self.counter)
        self._index = PruneIndex()
        self.excess = 0.0
        self.futile_folds = 0
        self.added = (0, 0)
        """(tokens the answered requests added to the prompt, requests counted): what a
        request adds on average, an engine's read price (`held_price`)."""
        self.largest = 0
        """The most one answered request added to the prompt (`growth` sets it aside)."""
        self._last_prompt: int | None = None
        self._planned: tuple[tuple[str, int, int], int, PrunePlan] | None = None
        """The prune plan of the transcript `maintain` last returned (its key and length):
        the request sent next is that transcript, so `observed` need not plan it again."""

    def learned_window(self, window: int) -> None:
        """The window became a fact mid-run (a rejection named it): plan with it."""
        self.window = window
        self.prune_policy = self.policy.prune.for_window(window)
        self._planned = None

    def tokens(self, text: str) -> int:
        """A cheap per-message estimate (the calibrated ratio), for planning."""
        return self.counter.estimate(len(text))

    def plan(self, transcript: Transcript) -> PrunePlan:
        """`plan_prune` with `tokens`, kept step by step (`PruneIndex`)."""
        return self._index.plan(transcript, self.prune_policy, self.counter.estimate)

    def observed(self, transcript: Transcript, rendered: Rendered, usage: Usage) -> PrunePlan:
        """A request was answered: calibrate, and count the read cost of what a prune
        would have removed from it. Returns that prune (what a cold resume would drop)."""
        self.sizer.observed(rendered.wire, usage.prompt_tokens)
        if self._last_prompt is not None and usage.prompt_tokens > 0:
            total, count = self.added
            grew = max(usage.prompt_tokens - self._last_prompt, 0)
            self.added = (total + grew, count + 1)
            self.largest = max(self.largest, grew)
        if usage.prompt_tokens > 0:
            self._last_prompt = usage.prompt_tokens
        planned = self._planned
        same = planned is not None and planned[:2] == (transcript.key, len(transcript))
        plan = planned[2] if planned is not None and same else self.plan(transcript)
        self.excess += held_price(self.profile, self.new_tokens) * plan.dropped_tokens
        return plan

    @property
    def new_tokens(self) -> float:
        """Tokens an answered request of this run added to the prompt, on average."""
        total, count = self.added
        return total / count if count else 0.0

    @property
    def growth(self) -> float:
        """The pace at which this run's prompt grows, in tokens a request: the mean of what
        its answered requests added, the largest one aside, so one wide step's results (60
        files read at once) are the drop the planner weighs, not the pace it weighs them
        against (`Situation.growth`); 0 until two requests were measured."""
        total, count = self.added
        return (total - self.largest) / (count - 1) if count > 1 else 0.0

    def rewrite_tokens(self, transcript: Transcript, plan: PrunePlan) -> int:
        """Tokens from the first changed message to the end, once the prune is applied."""
        if plan.first is None:
            return 0
        after = self._index.tokens_from(transcript, plan.first, self.counter.estimate)
        return max(after - plan.dropped_tokens, 0)

    async def maintain(
        self,
        transcript: Transcript,
        rendered: Rendered,
        *,
        remaining: int,
        forced: bool = False,
        cap: int | None = None,
    ) -> list[Change]:
        """The rewrites to apply before the next request, in order (none: send it as it
        is); each one's input is the previous one's transcript. `forced`:
        the provider rejected the prompt as too long; new results longer than `cap` (the
        share of a window the rejection named) are cut first, and prune or fold follow
        unless that was enough."""
        estimate = self.sizer.estimate(rendered.wire)
        changes: list[Change] = []
        if forced and cap is not None:
            cut = self.cut_new_results(transcript, cap, estimate)
            if cut is not None:
                changes.append(cut)
                transcript, estimate = cut.transcript, cut.event.tokens_after
        last = transcript.meta.last_request_at
        idle = time.time() - last if last is not None else None
        plan = self.plan(transcript)
        situation = Situation(
            estimate,
            self.window,
            idle,
            remaining,
            plan.dropped_tokens,
            self.rewrite_tokens(transcript, plan),
            self.excess,
            self.new_tokens,
            self.growth,
        )
        decision = decide(situation, self.profile, self.policy)
        fits = changes and self.window is not None and estimate < self.policy.trigger * self.window
        if forced and not fits:
            decision = Decision("prune" if plan else "fold", "overflow")
        if decision.action == "prune":
            pruned = self._prune(transcript, plan, decision, estimate)
            changes.append(pruned)
            transcript, estimate = pruned.transcript, pruned.event.tokens_after
        over = self.window is not None and estimate >= self.policy.trigger * self.window
        if (decision.action == "fold" or over) and self._may_fold():
            folded = await self._fold(transcript, decision.reason or "trigger", estimate)
            if folded is not None:
                changes.append(folded)
                transcript = folded.transcript
        if changes:
            self.excess = 0.0
            plan = self.plan(transcript)  # what the rewritten conversation still offers
        self._planned = (transcript.key, len(transcript), plan)
        return changes

    def cut_new_results(self, transcript: Transcript, cap: int, estimate: int) -> Change | None:
        """Results added since the last answered request that are longer than `cap` (a
        share of a window just learned), cut as they would have been had the window been
        known; no provider has read them yet, so no cache is lost."""
        last = max((i for i, m in enumerate(transcript) if isinstance(m, AssistantTurn)), default=0)
        found = [
            (i, m)
            for i, m in transcript.visible(last)
            if isinstance(m, ToolResult) and len(m.content) > cap
        ]
        if not found:
            return None
        edits = {i: cap_text(m.content, cap)[0] for i, m in found}
        scratch = scratch_copy(transcript)
        rewrite = scratch.replace_content(edits)
        dropped = sum(self.tokens(m.content) - self.tokens(edits[i]) for i, m in found)
        after = max(estimate - dropped, 0)
        event = MaintenanceEvent("cut", "overflow", rewrite.revision, len(edits), estimate, after)
        return Change(scratch, rewrite, event)

    def _prune(
        self, transcript: Transcript, plan: PrunePlan, decision: Decision, estimate: int
    ) -> Change:
        scratch = scratch_copy(transcript)
        rewrite = scratch.replace_content(plan.edits)
        after = max(estimate - plan.dropped_tokens, 0)
        event = MaintenanceEvent(
            "prune",
            decision.reason,
            rewrite.revision,
            len(plan.edits),
            estimate,
            after,
            decision.predicted_cost,
            decision.predicted_saving,
        )
        return Change(scratch, rewrite, event)

    def _may_fold(self) -> bool:
        return self.policy.fold and self.futile_folds < self.policy.max_futile_folds

    async def _fold(self, transcript: Transcript, reason: Reason, estimate: int) -> Change | None:
        span = fold_span(transcript, self.plan(transcript).tail_start)
        if span is None:
            return None
        try:
            folded = await summarise(self.model, transcript, self.tools)
        except ProviderError:
            self.futile_folds += 1
            return None
        scratch = scratch_copy(transcript)
        rewrite = scratch.fold(*span, folded.text)
        after = self.sizer.estimate(self.model.render(scratch, self.tools).wire)
        futile = self.window is not None and after >= self.policy.trigger * self.window
        self.futile_folds = self.futile_folds + 1 if futile else 0
        covered = span[1] - span[0]
        event = MaintenanceEvent(
            "fold", reason, rewrite.revision, covered, estimate, after, usage=folded.usage
        )
        return Change(scratch, rewrite, event)
