"""`benchmarks.toolbox`: every arm performs the plan's tool uses (run_arm checks it), and
warmloop's disclosure costs at most half of sending all 120 schemas cached (issue 9's
target) on every provider's rules; re-sending discovered schemas costs more than either."""

from __future__ import annotations

from benchmarks.toolbox import measure, table


def test_warmloops_disclosure_costs_at_most_half_of_all_schemas_cached() -> None:
    rows = measure()
    cost = {(r.arm, r.provider): r.dollars for r in rows}
    providers = {r.provider for r in rows}
    assert len(providers) == 2
    for provider in providers:
        assert cost[("gateway", provider)] <= 0.5 * cost[("all", provider)]
        assert cost[("resend", provider)] > cost[("all", provider)]
        assert cost[("grow", provider)] > cost[("gateway", provider)]
    requests = {r.arm: r.requests for r in rows}
    assert requests == {"gateway": 40, "native": 34, "all": 34, "resend": 40, "grow": 40}
    assert "| warmloop disclosure |" in table(rows)
