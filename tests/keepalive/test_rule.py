"""The keep-alive decision: hand-computed prices, and the bounds the rule keeps on any pause.

Anthropic Sonnet 4.6 (5m): reads 0.1x, writes 1.25x, TTL 300 s, keep-alives every 270 s.
A 50,000-token prefix: one ping reads it (5,000), a miss re-writes it (62,500 - 5,000).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop.facts.profiles import profile_for
from warmloop.keepalive.rule import (
    PauseCosts,
    choose_retention,
    keep_alive,
    offline_cost,
    pause_costs,
    rule_cost,
)

SONNET = profile_for("anthropic:claude-sonnet-4-6")


def costs_of(prefix: int = 50_000, **kwargs: object) -> PauseCosts:
    costs = pause_costs(SONNET, prefix, **kwargs)  # type: ignore[arg-type]
    assert costs is not None
    return costs


def test_a_ping_is_priced_as_a_read_and_a_miss_as_a_rewrite() -> None:
    costs = costs_of(output_ratio=5.0)
    assert costs.ping == pytest.approx(5_000 + 5.0)
    assert costs.miss == pytest.approx(62_500 - 5_000)
    assert (costs.ttl, costs.interval) == (300.0, 270.0)
    assert costs.pings_paid_for == 11


def test_a_cold_prune_shrinks_the_miss() -> None:
    assert costs_of(cold_tokens=20_000).miss == pytest.approx(25_000 - 5_000)


@pytest.mark.parametrize(
    "spec", ["deepseek:deepseek-chat", "local:qwen2.5-coder-1.5b", "openai-compatible:x"]
)
def test_caches_that_live_for_hours_or_have_no_ttl_are_never_pinged(spec: str) -> None:
    assert pause_costs(profile_for(spec), 50_000) is None


def test_a_prefix_below_the_minimum_is_never_pinged() -> None:
    assert pause_costs(SONNET, 1_000) is None


def test_without_history_the_rule_pings_as_many_times_as_one_miss_pays_for() -> None:
    costs = costs_of()
    assert [keep_alive(costs, sent) for sent in (0, 10, 11)] == [True, True, False]
    # 20 minutes: 4 moments, all pinged, warm on resume.
    assert rule_cost(1_200, costs) == pytest.approx(4 * 5_000)
    # 3 hours: 11 pings, then the miss anyway.
    assert rule_cost(10_800, costs) == pytest.approx(11 * 5_000 + 57_500)


def test_history_of_long_pauses_lets_the_cache_go_cold_at_once() -> None:
    costs = costs_of()
    hours = [7_200.0, 9_000.0, 14_400.0]
    assert not keep_alive(costs, 0, hours)
    assert rule_cost(8_000, costs, hours) == pytest.approx(costs.miss)


def test_history_of_approvals_within_the_hour_pings_past_one_miss_worth() -> None:
    # One miss pays for 11 pings (about 50 minutes); most approvals take 10 minutes, one
    # took 55: pinging through the long one (12 pings) beats a miss after 11 of them.
    costs = costs_of()
    approvals = [600.0, 600.0, 600.0, 3_300.0]
    assert keep_alive(costs, 11, approvals)
    assert rule_cost(3_300, costs, approvals) == pytest.approx(12 * 5_000)
    assert not keep_alive(costs, 11, [])


def test_history_of_short_pauses_pings_through_them() -> None:
    costs = costs_of()
    builds = [600.0, 700.0, 900.0]
    assert rule_cost(800, costs, builds) == pytest.approx(2 * 5_000)


@given(
    pause=st.floats(0, 50_000),
    prefix=st.integers(4_096, 400_000),
    share=st.floats(0.2, 1.0),
)
def test_without_history_the_rule_costs_at_most_twice_the_optimum_plus_one_ping(
    pause: float, prefix: int, share: float
) -> None:
    costs = costs_of(prefix, cold_tokens=max(1, int(prefix * share)))
    assert rule_cost(pause, costs) <= 2 * offline_cost(pause, costs) + costs.ping + 1e-6


@given(
    pause=st.floats(0, 50_000),
    history=st.lists(st.floats(0, 50_000), max_size=12),
)
def test_with_any_history_a_pause_costs_at_most_twice_the_pings_a_miss_pays_for_and_the_miss(
    pause: float, history: list[float]
) -> None:
    costs = costs_of()
    cost = rule_cost(pause, costs, history)
    assert cost <= 2 * costs.pings_paid_for * costs.ping + costs.miss + 1e-6
    assert cost >= offline_cost(pause, costs) - 1e-6


@given(pause=st.floats(0, 50_000), history=st.lists(st.floats(0, 50_000), max_size=8))
def test_a_pause_within_the_ttl_costs_nothing_and_never_pings(
    pause: float, history: list[float]
) -> None:
    costs = costs_of()
    if pause <= costs.interval:
        assert rule_cost(pause, costs, history) == 0.0


def test_the_longer_ttl_is_chosen_before_a_pause_expected_to_be_long() -> None:
    # 2,000 tokens written at this request: 1h costs 0.75 * 2,000 = 1,500 more than 5m.
    long_pauses = [1_800.0, 2_400.0, 3_000.0]
    choice = choose_retention(SONNET, 50_000, 2_000, long_pauses)
    assert choice.retention.name == "1h"
    assert choice.expected == pytest.approx(1_500)
    assert choice.expected < choice.default_expected


def test_a_gap_nobody_waits_on_is_priced_as_a_miss_not_as_pings() -> None:
    # Follow-ups 20-50 minutes later, nobody waiting: a miss each under 5m, nothing under 1h.
    followups = [1_200.0, 3_000.0]
    choice = choose_retention(SONNET, 50_000, 2_000, [], unattended=followups)
    assert choice.default_expected == pytest.approx(57_500)
    assert choice.retention.name == "1h"


def test_a_miss_costs_the_resume_its_own_write_whatever_this_request_was_written_for() -> None:
    # The request after a miss writes at the retention it is sent with (the model's own,
    # unless chosen for it), so a gap that outlives both TTLs costs the same under each:
    # here three of four follow-ups come after two hours, one after half an hour.
    followups = [1_800.0, 7_200.0, 7_200.0, 7_200.0]
    choice = choose_retention(SONNET, 50_000, 2_000, [], unattended=followups)
    assert choice.default_expected == pytest.approx(57_500)  # 1.25 * 50k - 0.1 * 50k
    assert choice.retention.name == "1h"
    assert choice.expected == pytest.approx(1_500 + 0.75 * 57_500)
    costs = pause_costs(SONNET, 50_000)
    longer = pause_costs(SONNET, 50_000, retention=SONNET.retention_for("1h"))
    assert costs is not None
    assert longer is not None
    assert longer.miss == costs.miss


def test_shares_weigh_the_gaps_and_a_session_left_costs_nothing() -> None:
    quick, back = [20.0] * 40, [1_800.0]  # pooled: 1 in 41 a miss, less than 1h costs more
    assert choose_retention(SONNET, 50_000, 2_000, quick, unattended=back).retention.name == "5m"
    likely_last = choose_retention(SONNET, 50_000, 2_000, quick, unattended=back, shares=(0.3, 0.7))
    assert likely_last.retention.name == "1h"
    left = choose_retention(SONNET, 50_000, 2_000, quick, unattended=[math.inf] * 4)
    assert left.retention.name == "5m"
    assert left.default_expected == 0.0  # nothing follows a session left: no miss to price


def test_the_default_ttl_stays_when_pauses_are_short_or_unknown() -> None:
    assert choose_retention(SONNET, 50_000, 2_000, [5.0, 10.0, 30.0]).retention.name == "5m"
    assert choose_retention(SONNET, 50_000, 2_000, []).retention.name == "5m"


def test_a_longer_ttl_that_costs_nothing_more_is_always_taken() -> None:
    openai = profile_for("openai:gpt-5", cache_ttl="in_memory")
    for history in ([3_000.0], [30.0], []):
        assert choose_retention(openai, 50_000, 2_000, history).retention.name == "24h"


def test_a_longer_ttl_is_paid_on_the_prefix_an_eviction_makes_the_request_write_again() -> None:
    """Gaps of six minutes, just past Sonnet's five: an hour's write saves their ping. Where
    the cache always lives, the hour pays on the 2,000 new tokens; where a tenth of returns
    find it evicted, the request writes its 50,000-token prefix again that often, at the
    hour's rate too, and the five minutes cost less (issue 36)."""
    gaps = [360.0] * 10
    assert choose_retention(SONNET, 50_000, 2_000, gaps).retention.name == "1h"
    evicted = choose_retention(SONNET, 50_000, 2_000, gaps, survival=0.9)
    assert evicted.retention.name == "5m"
