"""The long session on a host that publishes its window (issue 36): with every default (the
host's billing unknown to the agent), warmloop costs at most 1.05x the offline optimum
priced under GPT-5's rules; it cost 1.105x when an engine's held token was priced at
nothing and the session was pruned only at the trigger."""

from __future__ import annotations

from benchmarks.long_session import HOST_RULES, Schedules, run_on_host
from benchmarks.long_session_host import prune_points
from benchmarks.session_costs import price


def test_the_host_session_with_defaults_is_within_five_percent_of_the_optimum() -> None:
    timed, tools, _ = run_on_host(70, 128_000, HOST_RULES, told=False)
    schedules = Schedules(70, 128_000, HOST_RULES, tools)
    optimum = sum(schedules.costs(schedules.optimum()))
    outcomes = price(timed, tools, HOST_RULES, 100)
    warmloop = sum(o.cost.total if o.cost else 0.0 for o in outcomes)
    assert warmloop <= 1.05 * optimum, (warmloop, optimum)
    points = prune_points([t for _, t in timed])
    assert len(points) > 4  # pruned warm between the trigger's prunes, as the optimum does
