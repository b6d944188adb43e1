"""Limits on a run's usage, with pydantic-ai's names (`UsageLimits`), and a limit in
dollars beside them: checked before each request, so the request that would pass a limit
is never sent (the run ends with `UsageLimitExceeded`, carrying the transcript, the usage
and the cost so far).

What the next request will use is known before it is sent, up to an estimate: its prompt
is the previous request's exact prompt plus what was appended since, counted as the
maintainer counts it (`maintenance/size.py`, with its margin); its price is the run's own
cost model's, the cached prefix read where the cache is still warm and the rest written
(or sent uncached where writes are not billed), at the model's prices; its answer is as
long as the run's answers so far on average (none before the first). An answer's length
cannot be known before it comes: the output limit stops the run once its output has
reached it (`max_tokens` bounds one answer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

from warmloop.errors import ConfigurationError
from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.pricing import cost
from warmloop.facts.usage import Usage
from warmloop.maintenance.size import PromptSizer, TokenCounter
from warmloop.providers.base import Model
from warmloop.wire.stream import WireStream


@dataclass(frozen=True)
class UsageLimits:
    """Limits on one run (`agent.run(task, usage_limits=...)`), each None for none, as
    pydantic-ai names them: `request_limit` model requests, `input_tokens_limit` prompt
    tokens (cached or not), `output_tokens_limit` answer tokens, `total_tokens_limit` both;
    and `cost_limit`, US dollars at the model's prices, cache reads and writes priced as
    billed. Each is checked before a request: one that would pass a limit is never sent,
    and the run ends with `UsageLimitExceeded`."""

    request_limit: int | None = None
    input_tokens_limit: int | None = None
    output_tokens_limit: int | None = None
    total_tokens_limit: int | None = None
    cost_limit: float | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None:
                continue
            number = isinstance(value, int | float) and not isinstance(value, bool)
            whole = isinstance(value, int) or item.name == "cost_limit"
            if not number or not whole or not math.isfinite(value) or value <= 0:
                kind = (
                    "a positive number of dollars"
                    if item.name == "cost_limit"
                    else "a positive integer"
                )
                raise ConfigurationError(
                    f"UsageLimits({item.name}=...) must be {kind} or None, got {value!r}"
                )

    def check_priced(self, model: str, facts: ModelFacts) -> None:
        """A limit in dollars needs the model's prices: refused before the run, naming how
        to give them, where the model bills per token and has none."""
        if self.cost_limit is None or facts.profile.mode == "engine":
            return
        if facts.prices is None:
            raise ConfigurationError(
                f"UsageLimits(cost_limit=...) needs {model}'s prices, and the price table has "
                "none; add them to a JSON file in the prices.json format and set "
                "WARMLOOP_PRICES to it, or limit tokens instead"
            )


@dataclass(frozen=True)
class SoFar:
    """What a run has used before its next request, and what that request would add."""

    usage: Usage
    dollars: float
    next_usage: Usage
    next_dollars: float


class RunLimits:
    """One run's limits, and the estimate of each next request they are checked against
    (see the module docstring)."""

    def __init__(self, limits: UsageLimits, model: str) -> None:
        self.limits = limits
        self.sizer = PromptSizer(TokenCounter(model))

    def observed(self, wire: WireStream, prompt_tokens: int) -> None:
        """A request was answered: its exact prompt is where the next estimate starts."""
        self.sizer.observed(wire, prompt_tokens)

    def so_far(
        self,
        usages: Sequence[Usage],
        facts: ModelFacts,
        wire: WireStream,
        *,
        last_prompt: int,
        warm: bool,
        ttl: str | None,
    ) -> SoFar:
        """The run's usage and cost so far (`usages`, every request's), and the next
        request's (`wire`), its cached prefix `last_prompt` tokens long where `warm`."""
        prices = facts.prices
        spent = sum(usages, Usage())
        prompt = self.sizer.estimate(wire)
        read = facts.profile.cacheable(min(last_prompt, prompt)) if warm else 0
        rest = prompt - read
        answers = [u.output_tokens for u in usages]
        output = math.ceil(sum(answers) / len(answers)) if answers else 0
        written = rest if facts.profile.writes_billed else 0
        estimate = Usage(
            input_tokens=prompt,
            cache_read_tokens=read,
            cache_write_tokens=written,
            cache_write_1h_tokens=written if ttl == "1h" else 0,
            cache_write_12h_tokens=written if ttl == "12h" else 0,
            output_tokens=output,
        )
        dollars = sum(cost(u, prices) for u in usages) if prices is not None else 0.0
        following = cost(estimate, prices) if prices is not None else 0.0
        return SoFar(spent, dollars, estimate, following)

    def passed(self, sent: int, so_far: SoFar) -> tuple[str, str] | None:
        """The limit the next request would pass (its name, e.g. `cost_limit`) and why,
        said for people; None to send it. `sent`: the run's requests so far."""
        limits, used, ahead = self.limits, so_far.usage, so_far.next_usage
        prompts = used.prompt_tokens + ahead.prompt_tokens
        answers = used.output_tokens + ahead.output_tokens
        checks = (
            ("request_limit", sent + 1, "requests"),
            ("input_tokens_limit", prompts, "input tokens"),
            ("output_tokens_limit", used.output_tokens + 1, "output tokens"),
            ("total_tokens_limit", prompts + answers, "tokens"),
        )
        for name, would, what in checks:
            limit = getattr(limits, name)
            if limit is not None and would > limit:
                return name, f"the next request would pass the limit of {limit:,} {what} ({name})"
        dollars = limits.cost_limit
        if dollars is not None and so_far.dollars + so_far.next_dollars > dollars:
            return "cost_limit", (
                f"the next request would pass the limit of ${dollars:.4f} (cost_limit): "
                f"${so_far.dollars:.4f} spent, about ${so_far.next_dollars:.4f} more for the "
                "next request"
            )
        return None


def run_limits(limits: object, model: Model) -> RunLimits | None:
    """A run's limits on `model` (None without any), refused before the run where they are
    no `UsageLimits` or where a limit in dollars has no prices to count with."""
    if limits is None:
        return None
    if not isinstance(limits, UsageLimits):
        raise ConfigurationError(
            f"usage_limits must be a UsageLimits (from warmloop import UsageLimits), got {limits!r}"
        )
    limits.check_priced(model.name, model.facts)
    return RunLimits(limits, model.name)
