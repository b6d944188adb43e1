"""A self-hosted engine bills no read, but every token a request adds attends to each token
held in the prompt: the planner prices a held token at that attention (issue 36), so a
session whose requests each add thousands of tokens is pruned warm there as on a hosted
provider, and one whose requests add a few hundred is still pruned only at the trigger."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.facts.profiles import profile_for
from warmloop.maintenance.planner import (
    ATTENTION_SHARE,
    Decision,
    MaintenancePolicy,
    Situation,
    decide,
    held_price,
)

LOCAL = profile_for("local")
POLICY = MaintenancePolicy()
WARM = Situation(
    prompt_tokens=50_000,
    window=200_000,
    idle=10.0,
    remaining=20,
    dropped_tokens=30_000,
    rewrite_tokens=20_000,
    excess=1e9,
)


def test_requests_that_add_thousands_of_tokens_make_a_warm_prune_pay_on_an_engine() -> None:
    # 6,000 new tokens a request: a held token costs 6,000 * 2.5e-5 = 0.15 of a token;
    # cost = (1.0 - 0.15) * 20,000 = 17,000; saving = 0.15 * 30,000 * 20 = 90,000.
    decision = decide(replace(WARM, new_tokens=6_000.0), LOCAL, POLICY)
    assert (decision.action, decision.reason) == ("prune", "pays")
    assert decision.predicted_cost == pytest.approx(17_000.0)
    assert decision.predicted_saving == pytest.approx(90_000.0)


def test_requests_that_add_little_leave_an_engine_alone_until_the_trigger() -> None:
    # 200 new tokens a request: 0.005 a held token, saving 3,000 against a 19,900 rewrite.
    assert decide(replace(WARM, new_tokens=200.0), LOCAL, POLICY) == Decision("none")


@given(new=st.floats(0.0, 1e9))
def test_a_held_token_never_costs_more_than_a_new_one_and_a_billed_read_is_the_bill(
    new: float,
) -> None:
    assert 0.0 <= held_price(LOCAL, new) <= 1.0
    assert held_price(LOCAL, new) == pytest.approx(min(1.0, ATTENTION_SHARE * new))
    hosted = profile_for("anthropic:claude-sonnet-4-6")
    assert held_price(hosted, new) == hosted.read_multiplier


def reasons(result: str, steps: int) -> list[str]:
    @tool
    def read(path: str) -> str:
        """Read one part of a report."""
        return f"<{path}>" + result

    model = ScriptedModel(name="scripted", context_window=400_000)
    model.enqueue(*[call("read", path=str(k)) for k in range(steps)], call("submit", answer="ok"))
    agent = Agent(model, [read], max_steps=steps + 2)
    return [e.reason for e in agent.run_sync("Read every part.").maintenance]


def test_an_engine_session_of_large_results_is_pruned_warm_before_the_trigger() -> None:
    # 50 results of about 6,000 tokens reach 300,000 tokens, below 0.8 of the window.
    assert "pays" in reasons("x" * 24_000, 50)


def test_an_engine_session_of_small_results_is_never_rewritten_warm() -> None:
    assert reasons("x" * 1_200, 50) == []
