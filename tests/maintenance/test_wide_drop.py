"""A drop that arrives at once (issue 48): a wide step's results leave the protected tail
together, and the warm prune comes as soon as they are on offer, not after the read cost
paid on them caught up with the rewrite as if they had trickled in (the wide step's first
prune came 4 to 5 requests late, and the run's later batches with it). A drop that built
up at the run's own pace is batched exactly as before."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop import Agent, Reply, ScriptedModel, Transcript, UserText, tool
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.facts.usage import Usage
from warmloop.maintenance import maintainer
from warmloop.maintenance.maintainer import Maintainer
from warmloop.maintenance.planner import (
    Decision,
    MaintenancePolicy,
    Situation,
    batched_cost,
    decide,
)

SONNET = "anthropic:claude-sonnet-4-6"
PROFILE = profile_for(SONNET)
POLICY = MaintenancePolicy()
# cost of a prune = (1.25 - 0.1) * 20,000 rewritten tokens = 23,000
# saving = 0.1 * 30,000 dropped tokens * 20 requests left = 60,000
# a drop of 30,000 at a pace of g tokens a request: 0.1 * 30,000^2 / (2 g) = 45,000,000 / g
ARRIVED = Situation(
    prompt_tokens=50_000,
    window=200_000,
    idle=10.0,
    remaining=20,
    dropped_tokens=30_000,
    rewrite_tokens=20_000,
    excess=0.0,
)


def test_a_drop_far_above_the_runs_pace_is_pruned_before_any_excess_is_paid() -> None:
    # 45,000,000 / 1,956 = 23,006 >= 23,000; 45,000,000 / 1,957 = 22,994 < 23,000.
    decision = decide(replace(ARRIVED, growth=1_956.0), PROFILE, POLICY)
    assert decision == Decision("prune", "pays", 23_000.0, 60_000.0)
    assert decide(replace(ARRIVED, growth=1_957.0), PROFILE, POLICY) == Decision("none")


def test_without_a_pace_only_the_excess_paid_counts() -> None:
    assert decide(ARRIVED, PROFILE, POLICY) == Decision("none")
    assert batched_cost(replace(ARRIVED, excess=5.0), 0.1) == 5.0


def test_a_drop_that_arrived_at_once_still_waits_for_a_horizon_that_pays_it_back() -> None:
    # 7 requests left: saving 0.1 * 30,000 * 7 = 21,000 < 23,000, however fast it came.
    assert decide(replace(ARRIVED, growth=1.0, remaining=7), PROFILE, POLICY) == Decision("none")


@given(
    pace=st.integers(1, 50_000),
    requests=st.integers(1, 200),
    read=st.sampled_from([0.1, 0.25, 0.5]),
)
def test_a_drop_that_built_up_at_the_runs_pace_is_batched_by_its_excess_alone(
    pace: int, requests: int, read: float
) -> None:
    # pace tokens a request for `requests` requests, read each time: the excess paid is
    # read * pace * (1 + 2 + ... + requests), never below read * D^2 / (2 * pace).
    dropped = pace * requests
    excess = read * pace * requests * (requests + 1) / 2
    situation = replace(ARRIVED, dropped_tokens=dropped, excess=excess, growth=float(pace))
    assert batched_cost(situation, read) == excess


def answered(planner: Maintainer, transcript: Transcript, prompt_tokens: int) -> None:
    """A request of `prompt_tokens` was answered."""
    rendered = planner.model.render(transcript, planner.tools)
    planner.observed(transcript, rendered, Usage(input_tokens=prompt_tokens, output_tokens=1))


def test_the_runs_pace_is_its_mean_addition_with_the_largest_aside() -> None:
    scripted = ScriptedModel(name=SONNET)
    planner = Maintainer(scripted, [], PROFILE, POLICY, window=None)
    transcript = Transcript()
    transcript.append(UserText("Read them."))
    answered(planner, transcript, 1_000)
    assert planner.growth == 0.0  # nothing added yet
    answered(planner, transcript, 1_100)
    assert planner.growth == 0.0  # one addition: it is the largest, nothing is left
    for prompt in (41_100, 41_400, 41_900):  # the wide step, then two ordinary steps
        answered(planner, transcript, prompt)
    assert planner.growth == pytest.approx((100 + 300 + 500) / 3)
    assert planner.new_tokens == pytest.approx(40_900 / 4)  # an engine's price: all of it


WIDE = 60
MODULE = "m" * 2_600  # about 650 tokens a module
LARGE = "f" * 12_000  # about 3,000 tokens a large file


@tool
def read_module(path: str) -> str:
    """Read one module."""
    return f"<{path}>" + MODULE


@tool
def read_large(path: str) -> str:
    """Read one large file."""
    return f"<{path}>" + LARGE


def one(name: str, path: str) -> Reply:
    return Reply(calls=((name, json.dumps({"path": path})),))


def wide_step_run() -> None:
    """The wide Anthropic step (`benchmarks.wide_step`, A60): 6 steps of one read, one of
    `WIDE` parallel reads, 30 large reads, submit."""
    model = ScriptedModel(name=SONNET)
    model.enqueue(*(one("read_module", f"start_{k}.py") for k in range(6)))
    wide = tuple(("read_module", json.dumps({"path": f"m_{k}.py"})) for k in range(WIDE))
    model.enqueue(Reply(calls=wide))
    model.enqueue(*(one("read_large", f"f_{k}.py") for k in range(30)))
    model.enqueue(Reply(calls=(("submit", json.dumps({"answer": "done"})),)))
    Agent(model, [read_module, read_large]).run_sync("Read every module, then the files.")


def test_a_wide_steps_results_are_pruned_on_the_request_they_leave_the_tail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, str]] = []

    def spy(situation: Situation, profile: CacheProfile, policy: MaintenancePolicy) -> Decision:
        decision = decide(situation, profile, policy)
        seen.append((situation.dropped_tokens, decision.action))
        return decision

    monkeypatch.setattr(maintainer, "decide", spy)
    wide_step_run()
    # The request at which the wide step's reads (about 39,000 tokens) come on offer.
    arrived = next(k for k, (dropped, _) in enumerate(seen) if dropped > WIDE * 500)
    assert seen[arrived][0] > 10 * seen[arrived - 1][0]  # it came at once, not built up
    assert seen[arrived][1] == "prune"
    assert all(action == "none" for _, action in seen[:arrived])
