"""The planner's rules, with hand-computed numbers (Anthropic Sonnet 4.6: reads 0.1x, 5-minute
writes 1.25x, cold after 360 s; a 200,000-token window is passed in)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from warmloop.facts.profiles import profile_for
from warmloop.maintenance.planner import Decision, MaintenancePolicy, Situation, decide

PROFILE = profile_for("anthropic:claude-sonnet-4-6")
POLICY = MaintenancePolicy()
# cost of a prune = (1.25 - 0.1) * 20,000 rewritten tokens = 23,000
# saving = 0.1 * 30,000 dropped tokens * 20 requests left = 60,000
WARM = Situation(
    prompt_tokens=50_000,
    window=200_000,
    idle=10.0,
    remaining=20,
    dropped_tokens=30_000,
    rewrite_tokens=20_000,
    excess=23_000.0,
)


def test_a_warm_prune_waits_until_the_excess_paid_reaches_its_cost() -> None:
    assert decide(replace(WARM, excess=22_999.0), PROFILE, POLICY) == Decision("none")
    decision = decide(WARM, PROFILE, POLICY)
    assert decision == Decision("prune", "pays", 23_000.0, 60_000.0)


def test_a_warm_prune_that_cannot_pay_back_before_the_end_is_not_made() -> None:
    # 7 requests left: saving 0.1 * 30,000 * 7 = 21,000 < 23,000
    assert decide(replace(WARM, remaining=7, excess=1e9), PROFILE, POLICY) == Decision("none")


def test_idle_past_cold_after_prunes_at_no_extra_cost() -> None:
    decision = decide(replace(WARM, idle=361.0, excess=0.0), PROFILE, POLICY)
    assert decision == Decision("prune", "cold", 0.0, 60_000.0)
    assert decide(replace(WARM, idle=359.0, excess=0.0), PROFILE, POLICY).action == "none"


def test_cold_after_can_be_overridden() -> None:
    policy = MaintenancePolicy(cold_after=1_000.0)
    assert decide(replace(WARM, idle=400.0, excess=0.0), PROFILE, policy).action == "none"


def test_the_trigger_is_a_hard_ceiling_prune_first_then_fold() -> None:
    over = replace(WARM, prompt_tokens=160_000, excess=0.0, remaining=1)  # 0.8 * 200,000
    assert decide(over, PROFILE, POLICY) == Decision("prune", "trigger", 23_000.0, 3_000.0)
    nothing = replace(over, dropped_tokens=0)
    assert decide(nothing, PROFILE, POLICY) == Decision("fold", "trigger")
    assert decide(nothing, PROFILE, MaintenancePolicy(fold=False)) == Decision("none")
    assert decide(replace(over, prompt_tokens=159_999), PROFILE, POLICY).action == "none"


@pytest.mark.parametrize(
    ("spec", "cost"),
    [
        ("anthropic:claude-sonnet-4-6", 23_000.0),  # writes billed: (1.25 - 0.1) * 20,000
        ("openai:gpt-5", 18_000.0),  # no write fee: uncached (1.0 - 0.1) * 20,000
        ("openai:gpt-4o", 10_000.0),  # cached input at 0.5x: (1.0 - 0.5) * 20,000
    ],
)
def test_the_cost_of_a_rewrite_follows_the_providers_prices(spec: str, cost: float) -> None:
    decision = decide(replace(WARM, excess=1e9, remaining=1_000), profile_for(spec), POLICY)
    assert decision.action == "prune"
    assert decision.predicted_cost == pytest.approx(cost)


def test_a_local_engine_is_pruned_only_at_the_trigger() -> None:
    local = profile_for("local")  # reads are free: a warm prune never pays
    assert decide(replace(WARM, excess=1e9, remaining=1_000), local, POLICY).action == "none"
    over = replace(WARM, prompt_tokens=int(0.8 * 200_000))
    assert decide(over, local, POLICY).reason == "trigger"


def test_an_unknown_window_never_triggers_but_a_prune_that_pays_is_made_all_the_same() -> None:
    # Far over any trigger, with nothing paid on prunable content yet: left alone.
    unknown = replace(WARM, window=None)
    huge = replace(unknown, prompt_tokens=10**7, excess=0.0)
    assert decide(huge, PROFILE, POLICY) == Decision("none")
    # The same situation that pays with a known window pays without one (issue 48): the
    # prune rests on the prices and the horizon, not on the window.
    assert decide(unknown, PROFILE, POLICY) == decide(WARM, PROFILE, POLICY)
    assert decide(unknown, PROFILE, POLICY).reason == "pays"
    # Idle past the cache's life the prune is free whatever the window.
    assert decide(replace(unknown, idle=361.0), PROFILE, POLICY).reason == "cold"


# Round three (issue 38): a cold resume with nothing to prune.


def test_a_cold_resume_with_nothing_to_prune_is_left_alone() -> None:
    nothing = replace(WARM, idle=361.0, dropped_tokens=0, rewrite_tokens=0, excess=0.0)
    assert decide(nothing, PROFILE, POLICY) == Decision("none")
