"""How many more requests a run will send, from what a live agent knows.

A warm prune pays back only over the requests still to come, and no live agent knows that
number. The step budget is only an upper bound: most runs end long before it, and a prune
priced over it is made near the end of short runs, where it never pays back (on a 20-call
session, one such prune cost 4-9% more than leaving the session alone). The horizon is
instead the number of further requests a run will send with probability `CONFIDENCE`:

- this agent's earlier runs: of the `n` that got as far as this one, how much further they
  went, at the `k`-th shortest with `k = floor((n + 1) * (1 - CONFIDENCE))`: a new run
  goes at least that far with probability `(n + 1 - k) / (n + 1)`, at least `CONFIDENCE`
  whatever the distribution of run lengths; so it takes nine runs that got this far (one
  earlier run says as little of the next as a coin: a follow-up of 8 requests after a run
  of 38 was pruned warm over 38, and that session cost 0.783 of maintenance off against
  0.746 without the prune, `benchmarks.wide_step`);
- too few earlier runs got this far: the shorter of the Lindy guess below and the least
  further any of them went;
- no earlier run (or none got this far): a run seen at a random moment of its life is
  as likely anywhere in it, so the chance it goes `x` further after `done` is
  `done / (done + x)` (the Lindy rule); at `CONFIDENCE` that is `done * (1 - c) / c`;
- a run's life is the work it asks for, its tool calls, counted in steps of the width its
  steps typically have (the median calls of its steps that called a tool): a run of one
  call per step is as old as its requests, but one step of 60 parallel reads is 60 steps
  of work done, not one. A first run 12 requests into the wide Anthropic step (6 steps, 60
  reads at once, 4 reads since) is 70 steps old, expects 7 more, not 1, and prunes there,
  where the wide step's results leave the protected tail (`benchmarks.wide_step`: 0.713 of
  maintenance off, against 0.833 counting requests; the planner prunes a drop that came at
  once as soon as it pays, `planner.batched_cost`); a run whose steps are all alike is
  planned as before. Never younger than its requests. The bet is measured there too: the
  same run cut short after 8 to 15 reads observed the same and costs 0.90 to 0.99 of
  maintenance off (1.087 after 8 reads while the prune waited for its excess, issue 36);
- never more than the budget left, never less than the request about to be sent.

A rewrite priced over this horizon is one that pays back in nine runs out of ten. The
confidence trades medium sessions' savings against short sessions' losses: measured over
sessions of 10 to 60 file-sized results (`benchmarks.facts`), 0.8 let a prune at the last
request cost 11% more than none, 0.95 gave up most savings below 60 requests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

CONFIDENCE = 0.9
"""The chance a run still sends at least the horizon's requests."""


def requests_ahead(
    done: int,
    budget_left: int,
    earlier: Sequence[int] = (),
    confidence: float = CONFIDENCE,
    *,
    widths: Mapping[int, int] | None = None,
) -> int:
    """Further requests, this one included, that the run sends with probability
    `confidence`. `done`: requests this run has sent; `budget_left`: the most it can still
    send; `earlier`: how many requests each earlier run of this agent sent; `widths`: how many
    of this run's answered requests made each number of tool calls (`run_age`)."""
    if budget_left <= 1:
        return 1
    further = sorted(length - done for length in earlier if length > done)
    lindy = math.floor(run_age(done, widths or {}) * (1 - confidence) / confidence + 1e-9)
    # The k-th shortest of n is exceeded by a new run with probability (n + 1 - k) / (n + 1).
    k = math.floor((len(further) + 1) * (1 - confidence) + 1e-9)
    if k >= 1:
        guess = further[k - 1]
    elif further:
        guess = min(lindy, further[0])
    else:
        guess = lindy
    return max(1, min(guess, budget_left))


def run_age(done: int, widths: Mapping[int, int]) -> float:
    """The run's age in steps: its tool calls over its typical step's width (the lower
    median of its steps that called a tool), never less than `done`, the requests it sent.
    `widths` counts the answered requests by their tool calls ({1: 14, 60: 1}), so the age
    costs the few distinct widths a run has, not a sort of its whole history each request."""
    calling = sorted((width, count) for width, count in widths.items() if width > 0 and count > 0)
    steps = sum(count for _, count in calling)
    if not steps:
        return float(done)
    calls = sum(width * count for width, count in calling)
    middle = (steps - 1) // 2  # statistics.median_low's index into the sorted widths
    for width, count in calling:
        if middle < count:
            return max(float(done), calls / width)
        middle -= count
    raise AssertionError("unreachable: the median index is below the step count")
