"""The horizon's promise at every count of earlier runs (issue 49): of `n` earlier runs that
got as far as this one, the horizon is the furthest that a new run still reaches with
probability at least 0.9, whatever the distribution of run lengths: `(below + 1) / (n + 1)
<= 0.1`, `below` the earlier runs that went less far than it. And it is the furthest such:
the next length an earlier run went past it would break the promise. Checked at every
count, not only at 9 and 19 (a rule that gives 89.5% at 18, 28 or 38 runs agrees there).
In whole numbers: `10 * (below + 1) <= n + 1`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from warmloop.maintenance.horizon import requests_ahead

BUDGET = 100_000  # never the bound here


def kept(further: list[int], ahead: int) -> bool:
    """Whether a new run goes at least `ahead` further with probability at least 0.9,
    given the earlier runs' `further` lengths (exchangeable runs)."""
    below = sum(1 for x in further if x < ahead)
    return 10 * (below + 1) <= len(further) + 1


def check(further: list[int]) -> None:
    """The horizon over earlier runs that went `further` past the start (done = 0)."""
    ahead = requests_ahead(0, BUDGET, further)
    if len(further) < 9:  # no quantile promises 0.9: the least any went on, at most
        assert 1 <= ahead <= min(further)
        return
    assert kept(further, ahead), (len(further), ahead)
    past = [x for x in further if x > ahead]
    if past:  # the furthest that keeps it: the next length run past would break it
        assert not kept(further, min(past)), (len(further), ahead, min(past))


def test_at_every_count_of_earlier_runs_the_horizon_is_the_furthest_nine_in_ten_reach() -> None:
    for n in range(1, 1_001):
        check(list(range(1, n + 1)))  # every run went a different length: 1, 2, ... n


@settings(deadline=None)
@given(
    st.integers(1, 400).flatmap(lambda n: st.lists(st.integers(1, 5_000), min_size=n, max_size=n))
)
def test_at_any_count_of_runs_of_any_lengths_the_promise_holds_and_is_tight(
    further: list[int],
) -> None:
    check(further)
