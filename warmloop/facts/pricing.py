"""What requests cost: the cost of a `Usage` under a model's dated prices (the table, its
format and user price files are in `price_table`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from warmloop.errors import WarmloopError
from warmloop.facts.price_table import (
    PRICES_ENV,
    Prices,
    PriceTable,
    is_unpriced_engine,
    price_table,
)
from warmloop.facts.usage import Usage

PER_TOKEN = 1e-6  # table prices are USD per million tokens


@dataclass(frozen=True)
class Cost:
    """The USD cost of one or more requests, split by kind of token."""

    input: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        """Everything together, in USD."""
        return self.input + self.cache_read + self.cache_write + self.output

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.input + other.input,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.output + other.output,
        )


def cost_breakdown(usage: Usage, prices: Prices) -> Cost:
    """The cost of one request, split into uncached input, cache reads, writes and output.

    Writes are billed per retention: Anthropic's one-hour writes at the `1h` rate, OpenAI's
    twelve-hour writes at the `12h` rate, the rest at the shortest rate sold. A server-side
    compaction (`Usage.compaction`) is billed on top, at the same rates.
    """
    one_hour, twelve_hours = usage.cache_write_1h_tokens, usage.cache_write_12h_tokens
    if one_hour + twelve_hours > usage.cache_write_tokens:
        raise WarmloopError(
            f"usage has {one_hour} one-hour cache writes and {twelve_hours} twelve-hour ones "
            f"out of {usage.cache_write_tokens} cache writes; the provider's usage normalisation "
            "must count long-retention writes inside cache_write_tokens"
        )
    rates = prices.rates_for(usage)
    writes = (usage.cache_write_tokens - one_hour - twelve_hours) * rates.cache_write()
    if one_hour:
        writes += one_hour * rates.cache_write("1h")
    if twelve_hours:
        writes += twelve_hours * rates.cache_write("12h")
    own = Cost(
        input=usage.uncached_tokens * rates.input * PER_TOKEN,
        cache_read=usage.cache_read_tokens * rates.cache_read * PER_TOKEN,
        cache_write=writes * PER_TOKEN,
        output=usage.output_tokens * rates.output * PER_TOKEN,
    )
    compaction = usage.compaction
    if compaction == Usage():
        return own
    return own + cost_breakdown(compaction, prices)


def cost(usage: Usage, prices: Prices) -> float:
    """The USD cost of one request with this usage under these prices."""
    return cost_breakdown(usage, prices).total


@dataclass(frozen=True)
class CostReport:
    """The cost of a run's requests under one model's prices; costs are None when unpriced.
    `children`: a row per run it started (sub-agents, a handoff), each priced under its own
    model; `usage`, `breakdown` and `total` are the run's own, `tree_total` adds the rows."""

    model: str
    prices: Prices | None
    usages: tuple[Usage, ...]
    children: tuple[ChildCost, ...] = ()

    @property
    def usage(self) -> Usage:
        """Usage summed over every request."""
        return sum(self.usages, Usage())

    @property
    def per_request(self) -> tuple[Cost, ...] | None:
        """Each request's cost, in order, or None when the model has no price."""
        prices = self.prices
        if prices is None:
            return None
        return tuple(cost_breakdown(u, prices) for u in self.usages)

    @property
    def breakdown(self) -> Cost | None:
        """The run's cost by kind of token, or None when the model has no price."""
        per_request = self.per_request
        return None if per_request is None else sum(per_request, Cost())

    @property
    def total(self) -> float | None:
        """The run's cost in USD, or None when the model has no price."""
        breakdown = self.breakdown
        return None if breakdown is None else breakdown.total

    @property
    def tree_total(self) -> float | None:
        """The run's cost with every child's (theirs included), in USD; None when any of
        them is unpriced."""
        totals = [self.total, *(child.report.tree_total for child in self.children)]
        return None if any(t is None for t in totals) else sum(t for t in totals if t)

    def describe(self) -> str:
        """For people: the run's total and split, with the price date, or why it is
        unknown; then a line per child (indented by depth) and the tree's total."""
        lines = [self._own_line()]
        for child in self.children:
            lines += ["  " + line for line in child.describe().splitlines()]
        if self.children:
            total = self.tree_total
            shown = f"${total:.4f}" if total is not None else "unknown (a run is unpriced)"
            lines.append(f"tree total {shown} over {self.tree_requests} requests")
        return "\n".join(lines)

    @property
    def tree_requests(self) -> int:
        """Requests of the run and of every child, theirs included."""
        return len(self.usages) + sum(child.report.tree_requests for child in self.children)

    def _own_line(self) -> str:
        breakdown = self.breakdown
        if breakdown is None or self.prices is None:
            if is_unpriced_engine(self.model):
                return (
                    f"cost unknown: no price for {self.model!r}, which runs on a local, "
                    "self-hosted or scripted engine that warmloop never prices"
                )
            return (
                f"cost unknown: no price for {self.model!r} in the price table; add it to a "
                f"JSON file in the prices.json format and set {PRICES_ENV}=/path/to/that/file"
            )
        origin = f" from {self.prices.origin}" if self.prices.origin else ""
        return (
            f"${breakdown.total:.4f} over {len(self.usages)} requests "
            f"(input ${breakdown.input:.4f}, cache reads ${breakdown.cache_read:.4f}, "
            f"cache writes ${breakdown.cache_write:.4f}, output ${breakdown.output:.4f}; "
            f"prices as of {self.prices.as_of.isoformat()}{origin})"
        )


@dataclass(frozen=True)
class ChildCost:
    """One child run's row in its parent's report: what it is (`name`: its agent and the
    call it ran for) and its own report, its children's rows included."""

    name: str
    report: CostReport

    def describe(self) -> str:
        """The child's line (`name: ...`), then its own children's, indented."""
        first, *rest = self.report.describe().splitlines()
        return "\n".join([f"{self.name}: {first}", *rest])


def cost_report(
    model_name: str,
    usages: Iterable[Usage],
    table: PriceTable | None = None,
    *,
    priced_as: str | None = None,
    children: Iterable[ChildCost] = (),
) -> CostReport:
    """Price every request of a run under `model_name`'s entry, or `priced_as`'s (a host
    that bills like a known model; default table: `price_table`), with a row per child."""
    prices = (table or price_table()).lookup(priced_as or model_name)
    return CostReport(model_name, prices, tuple(usages), tuple(children))
