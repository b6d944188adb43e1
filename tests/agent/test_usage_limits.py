"""Usage limits (issue 45, must-show 3): `UsageLimits` with pydantic-ai's names, and a limit
in dollars, checked before each request, so the request that would pass a limit is never
sent; the run ends with `UsageLimitExceeded` carrying the transcript, the usage and the
cost so far, and every failed run exposes its cost."""

from __future__ import annotations

import pytest

from warmloop import (
    Agent,
    ConfigurationError,
    RequestFailed,
    ScriptedModel,
    UsageLimitExceeded,
    UsageLimits,
    call,
    tool,
)
from warmloop.messages import ToolResult

PRICED = "anthropic:claude-sonnet-4-6"


@tool
def lookup(city: str) -> str:
    """Return what is known of a city."""
    return f"{city} is in France. " * 200


def model(name: str = PRICED) -> ScriptedModel:
    """Three requests: two lookups, then the answer."""
    replies = [call("lookup", city="Paris"), call("lookup", city="Lyon")]
    return ScriptedModel([*replies, call("submit", answer="France")], name=name)


def limited(limits: UsageLimits, scripted: ScriptedModel) -> UsageLimitExceeded:
    with pytest.raises(UsageLimitExceeded) as info:
        Agent(scripted, [lookup]).run_sync("Where are they?", usage_limits=limits)
    return info.value


def test_a_cost_limit_just_below_the_next_request_stops_before_sending_it() -> None:
    # What would the third request cost? Stop before it by count, and read the estimate.
    probe = limited(UsageLimits(request_limit=2, cost_limit=1000.0), model())
    spent = probe.cost().total
    assert spent is not None
    assert probe.next_cost is not None
    assert probe.next_cost > 0
    boundary = spent + probe.next_cost

    below = model()
    stopped = limited(UsageLimits(cost_limit=boundary - 1e-9), below)
    assert len(below.requests) == 2  # the third was never sent
    assert stopped.limit == "cost_limit"
    assert stopped.cost().total == pytest.approx(spent)
    assert stopped.usage.output_tokens == 2
    assert isinstance(stopped.transcript.messages[-1], ToolResult)  # as it was before it
    assert "cost_limit" in str(stopped)

    at = model()
    run = Agent(at, [lookup]).run_sync(
        "Where are they?", usage_limits=UsageLimits(cost_limit=boundary + 1e-9)
    )
    assert len(at.requests) == 3
    assert run.output == "France"


def test_a_request_limit_sends_that_many_requests() -> None:
    scripted = model()
    error = limited(UsageLimits(request_limit=2), scripted)
    assert len(scripted.requests) == 2
    assert error.limit == "request_limit"
    assert len(error.requests) == 2


def test_an_output_limit_stops_once_the_output_has_reached_it() -> None:
    scripted = model()  # each scripted answer is one token
    error = limited(UsageLimits(output_tokens_limit=1), scripted)
    assert len(scripted.requests) == 1
    assert error.limit == "output_tokens_limit"


@pytest.mark.parametrize("name", ["input_tokens_limit", "total_tokens_limit"])
def test_a_token_limit_counts_the_next_prompt_before_it_is_sent(name: str) -> None:
    scripted = model()
    first_prompt = Agent(model(), [lookup]).run_sync("Where are they?").requests[0].usage
    # Room for the first prompt and its answer, never for the second, which holds it.
    error = limited(UsageLimits(**{name: 2 * first_prompt.prompt_tokens + 2}), scripted)
    assert len(scripted.requests) == 1
    assert error.limit == name


def test_a_failed_run_exposes_its_cost() -> None:
    scripted = ScriptedModel([call("lookup", city="Paris")], name=PRICED)
    with pytest.raises(RequestFailed) as info:
        Agent(scripted, [lookup]).run_sync("Where is it?")
    error = info.value
    assert error.model == PRICED
    assert len(error.usages) == 1
    total = error.cost().total
    assert total is not None
    assert total > 0


def test_an_engine_billing_nothing_never_reaches_a_cost_limit() -> None:
    run = Agent(model("scripted"), [lookup]).run_sync(
        "Where are they?", usage_limits=UsageLimits(cost_limit=1e-9)
    )
    assert run.output == "France"


def test_a_cost_limit_without_prices_is_refused_before_any_request() -> None:
    scripted = model("anthropic:claude-unpriced")
    with pytest.raises(ConfigurationError, match="WARMLOOP_PRICES"):
        Agent(scripted, [lookup]).run_sync("x", usage_limits=UsageLimits(cost_limit=1.0))
    assert scripted.requests == []


@pytest.mark.parametrize(
    "limits",
    [
        {"request_limit": 0},
        {"request_limit": 2.5},
        {"output_tokens_limit": True},
        {"cost_limit": -1},
        {"cost_limit": float("nan")},
        {"cost_limit": "1"},
    ],
)
def test_a_limit_that_is_no_positive_number_is_refused(limits: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="must be a positive"):
        UsageLimits(**limits)  # type: ignore[arg-type]


def test_usage_limits_must_be_usage_limits() -> None:
    with pytest.raises(ConfigurationError, match="must be a UsageLimits"):
        Agent(model(), [lookup]).run_sync("x", usage_limits={"cost_limit": 1.0})  # type: ignore[arg-type]
