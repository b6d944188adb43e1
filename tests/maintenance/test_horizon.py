"""The horizon a warm prune is priced over: what a live agent knows, never the step budget
alone; and in a real agent run, short sessions are never rewritten warm for a saving that
cannot come back before they end, and warm prunes stay batched (the excess builds up and
restarts after each)."""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.facts.profiles import CacheProfile
from warmloop.maintenance import maintainer
from warmloop.maintenance.horizon import requests_ahead, run_age
from warmloop.maintenance.planner import Decision, MaintenancePolicy, Situation, decide
from warmloop.maintenance.prune import PrunePolicy


@given(
    done=st.integers(0, 500),
    budget_left=st.integers(0, 500),
    earlier=st.lists(st.integers(1, 500), max_size=20),
)
def test_the_horizon_is_at_least_the_next_request_and_at_most_the_budget(
    done: int, budget_left: int, earlier: list[int]
) -> None:
    ahead = requests_ahead(done, budget_left, earlier)
    assert 1 <= ahead <= max(budget_left, 1)


def test_without_earlier_runs_nine_runs_in_ten_go_a_ninth_as_far_again() -> None:
    # Lindy: at a random moment a run is as likely anywhere in its life, so the chance it
    # goes x further after `done` is done / (done + x); 0.9 at x = done / 9.
    assert requests_ahead(0, 40) == 1
    assert requests_ahead(18, 40) == 2
    assert requests_ahead(90, 40) == 10
    assert requests_ahead(900, 12) == 12  # bounded by the budget left


def test_earlier_runs_say_how_much_further_runs_that_got_this_far_went() -> None:
    lengths = [12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
    # Of 10, a new run outgoes the k-th shortest with chance (11 - k) / 11: 0.9 only at k = 1.
    assert requests_ahead(10, 40, lengths) == 2
    assert requests_ahead(10, 40, [*lengths, *lengths[:9]]) == 2  # of 19, the second: 0.9
    assert requests_ahead(25, 40, lengths) == 1  # of the 3 that got here, the shortest
    assert requests_ahead(300, 400, lengths) == 33  # longer than any: the Lindy rule


PART = "x" * 8_000


@tool
def read(path: str) -> str:
    """Read a file."""
    return f"<{path}>" + PART


def session(model: ScriptedModel, steps: int) -> list[str]:
    model.enqueue(*[call("read", path=str(k)) for k in range(steps)], call("submit", answer="ok"))
    policy = MaintenancePolicy(prune=PrunePolicy(tail_tokens=2_000, tail_messages=4))
    agent = Agent(model, [read], maintenance=policy, max_steps=max(40, steps + 2))
    return [e.reason for e in agent.run_sync("Read them.").maintenance]


def test_a_short_first_run_is_not_pruned_warm_for_the_budget_it_will_not_use() -> None:
    # Ten reads on a 40-step budget: the budget would promise 30 more requests, enough to
    # pay back a prune; what the run knows (ten so far) never does before it ends.
    model = ScriptedModel(name="anthropic:claude-sonnet-4-6")
    assert session(model, 10) == []


def test_a_long_run_still_prunes_warm_once_the_saving_comes_back() -> None:
    model = ScriptedModel(name="anthropic:claude-sonnet-4-6")
    assert "pays" in session(model, 36)


def test_the_read_cost_paid_on_prunable_content_builds_up_and_restarts_after_each_prune(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The rent-or-buy rule in a real run: the excess (read cost paid on what a prune would
    # drop) grows request by request, a warm prune comes once it covers the rewrite, and
    # then it starts again from nothing, so prunes stay batched instead of following every
    # step once the first one paid.
    seen: list[tuple[float, str]] = []

    def spy(situation: Situation, profile: CacheProfile, policy: MaintenancePolicy) -> Decision:
        decision = decide(situation, profile, policy)
        seen.append((situation.excess, decision.action))
        return decision

    monkeypatch.setattr(maintainer, "decide", spy)
    reasons = session(ScriptedModel(name="anthropic:claude-sonnet-4-6"), 60)
    assert reasons.count("pays") >= 3
    prunes = [i for i, (_, action) in enumerate(seen) if action == "prune"]
    assert len(prunes) == len(reasons)
    for before, after in itertools.pairwise(prunes):
        between = [excess for excess, _ in seen[before + 1 : after + 1]]
        assert between[0] < seen[before][0] / 2  # restarted after the prune
        assert between == sorted(between)  # and built up again until the next
        assert between[-1] > between[0]


# Round three (issue 38): the quantile's promise for any number of runs; the last step.


@given(n=st.integers(1, 60))
def test_at_least_nine_earlier_runs_in_ten_went_as_far_as_the_horizon(n: int) -> None:
    lengths = list(range(1, n + 1))  # every run got past 0 and went 1, 2, ... n further
    ahead = requests_ahead(0, 1_000, lengths)
    assert sum(length >= ahead for length in lengths) >= 0.9 * n


def test_with_nine_or_nineteen_earlier_runs_the_horizon_is_one_nine_in_ten_reach() -> None:
    assert requests_ahead(0, 1_000, range(1, 10)) == 1  # 2 would be 8 runs in 9 (89%)
    assert requests_ahead(0, 1_000, range(1, 20)) == 2  # 3 would be 17 runs in 19 (89%)


def test_the_horizon_on_a_runs_last_step_is_that_request_and_the_extract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    horizons: list[int] = []
    maintain = maintainer.Maintainer.maintain

    async def recorded(self: maintainer.Maintainer, *args: Any, **kwargs: Any) -> Any:
        horizons.append(kwargs["remaining"])
        return await maintain(self, *args, **kwargs)

    monkeypatch.setattr(maintainer.Maintainer, "maintain", recorded)
    model = ScriptedModel([call("read", path=str(k)) for k in range(4)])
    model.enqueue(call("submit", answer="ok"))
    agent = Agent(model, [read], maintenance=MaintenancePolicy(), max_steps=4)
    agent.learned.run_lengths.extend([100] * 10)  # earlier runs went much further
    run = agent.run_sync("Read them.")
    assert run.extracted
    assert horizons[:4] == [5, 4, 3, 2]  # the budget left bounds it: step, rest, extract


def test_the_extract_step_is_priced_as_the_runs_last_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model that stops calling tools early leaves one request, the extract step's: a
    rewrite before it can never pay back, whatever the step budget left."""
    horizons: list[int] = []
    maintain = maintainer.Maintainer.maintain

    async def recorded(self: maintainer.Maintainer, *args: Any, **kwargs: Any) -> Any:
        horizons.append(kwargs["remaining"])
        return await maintain(self, *args, **kwargs)

    monkeypatch.setattr(maintainer.Maintainer, "maintain", recorded)
    model = ScriptedModel([call("read", path="0"), "I have read it.", call("submit", answer="ok")])
    named = {"answer": str}  # named outputs: a reply in words is no answer
    agent = Agent(model, [read], outputs=named, maintenance=MaintenancePolicy(), max_steps=40)
    agent.learned.run_lengths.extend([100] * 10)
    run = agent.run_sync("Read it.")
    assert run.extracted
    assert horizons == [41, 40, 1]


# Issue 36: the long session and the wide step.


def test_one_earlier_run_does_not_promise_its_length_to_the_next() -> None:
    # A follow-up of 8 requests after a run of 38 was priced over 38 and pruned warm (3%
    # over leaving it alone): one run says a new one goes as far with chance 1/2, not 0.9.
    assert requests_ahead(0, 40, [38]) == 1
    assert requests_ahead(18, 40, [38]) == 2  # the Lindy guess, below the 20 it went on
    assert requests_ahead(18, 40, [19]) == 1  # and never past the least any went on
    assert requests_ahead(0, 40, [38] * 9) == 38  # nine runs: the shortest, at 0.9


@given(
    done=st.integers(0, 200),
    earlier=st.lists(st.integers(1, 300), min_size=1, max_size=40),
)
def test_the_horizon_is_a_distribution_free_lower_bound_at_the_confidence(
    done: int, earlier: list[int]
) -> None:
    # Exchangeable runs: the next of n + 1 falls below the horizon with chance (s + 1) / (n + 1)
    # at most, s the earlier runs below it; at 0.9 that needs nine runs, else the least one.
    further = sorted(length - done for length in earlier if length > done)
    ahead = requests_ahead(done, 10_000, earlier)
    below = sum(1 for x in further if x < ahead)
    if len(further) >= 9:
        assert (below + 1) / (len(further) + 1) <= 1 - 0.9 + 1e-9
    elif further:
        assert ahead <= further[0]
    else:
        assert ahead == max(1, math.floor(done / 9 + 1e-9))


# Issue 36, the wide step's first run: a run's age is the tool calls it made.


def test_a_wide_step_ages_a_run_by_its_calls_in_steps_of_its_usual_width() -> None:
    # A60 before request 16: 6 steps of one call, one of 60 parallel reads, 8 of one read.
    # 74 steps of work at one call a step: a ninth of that, 8 more, not 15 / 9 -> 1.
    widths = Counter([1] * 6 + [60] + [1] * 8)
    assert run_age(15, widths) == 74
    assert requests_ahead(15, 26, widths=widths) == 8
    assert requests_ahead(15, 5, widths=widths) == 5  # still bounded by the budget left
    assert requests_ahead(15, 26, [20] * 9, widths=widths) == 5  # earlier runs still rule


@given(
    done=st.integers(0, 300),
    width=st.integers(1, 30),
    budget_left=st.integers(0, 300),
    earlier=st.lists(st.integers(1, 300), max_size=12),
)
def test_a_run_whose_steps_are_alike_is_as_old_as_its_requests(
    done: int, width: int, budget_left: int, earlier: list[int]
) -> None:
    # One call a step or five: the same horizon as counting requests (the short sessions'
    # figures, `benchmarks.facts`, cannot move); a final answer's 0 calls changes nothing.
    widths = Counter([width] * done + [0])
    assert requests_ahead(done, budget_left, earlier, widths=widths) == requests_ahead(
        done, budget_left, earlier
    )


def test_a_run_is_never_younger_than_its_requests() -> None:
    # Requests answered without a call (a format error, a text turn) still count.
    assert run_age(12, Counter([1, 0, 0, 0, 1])) == 12
    assert requests_ahead(27, 40, widths=Counter([1, 0, 0])) == 3


@given(st.integers(0, 400), st.lists(st.integers(0, 80), max_size=60))
def test_the_age_from_counted_widths_is_the_median_of_the_widths_themselves(
    done: int, widths: list[int]
) -> None:
    # The agent counts its steps by width; the age is what the sorted list's median gives.
    calling = [width for width in widths if width > 0]
    expected = max(done, sum(calling) / statistics.median_low(calling)) if calling else done
    assert run_age(done, Counter(widths)) == expected
