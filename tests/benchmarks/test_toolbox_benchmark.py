"""`benchmarks.toolbox`: every arm performs the plan's tool uses (run_arm checks it), and
warmloop's disclosure costs at most half of sending all 120 schemas cached (issue 9's
target) on every provider's rules; re-sending discovered schemas costs more than either;
and it teaches what the optimum teaches (issue 36)."""

from __future__ import annotations

import pytest

from benchmarks.toolbox import measure, table, where
from benchmarks.toolbox_session import TARGETS


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
    assert requests == {
        "gateway": 40,
        "ideal": 40,
        "native": 34,
        "all": 34,
        "resend": 40,
        "grow": 40,
    }
    assert "| warmloop disclosure |" in table(rows)
    # Issue 36: warmloop teaches in full only what the optimum teaches (the six tools the
    # plan uses, each once), so it costs what the optimum does, on every provider's rules.
    for provider in providers:
        gateway = next(r for r in rows if r.arm == "gateway" and r.provider == provider)
        assert gateway.taught == TARGETS
        assert gateway.dollars == cost[("ideal", provider)]
        assert sum(gateway.spend.dollars.values()) == pytest.approx(gateway.dollars)
    assert "| tools taught in full |" in where(rows)
