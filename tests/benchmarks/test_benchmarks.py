"""The scenario benchmarks: warmloop reuses the physical limit on every scenario, the
baselines pay for what they rebuild, and the table and plot are produced."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.measure import PROVIDERS, LoopResult
from benchmarks.report import markdown, plot
from benchmarks.scenario_table import run_all
from benchmarks.scenarios import PENDING, SCENARIOS, discovery_120_tools

pytestmark = pytest.mark.slow  # every scenario of the benchmark, run in full: the slow tier


@pytest.fixture(scope="module")
def results() -> list[LoopResult]:
    return run_all()


FORCED = "200-step session past the compaction trigger"
"""The one scenario whose window forces rewrites: each one moves the prefix on purpose."""


def test_warmloop_reaches_the_limit_on_every_scenario(results: list[LoopResult]) -> None:
    ours = {r.scenario: r for r in results if r.loop == "warmloop"}
    assert list(ours) == list(SCENARIOS)
    assert all(r.cached_over_limit >= 0.99 for name, r in ours.items() if name != FORCED)
    # past the trigger only the rewrites themselves lose reuse
    assert ours[FORCED].cached_over_limit >= 0.97
    rebuilt = next(r for r in results if (r.scenario, r.loop) == (FORCED, "rebuild each step"))
    for spec in PROVIDERS:
        assert rebuilt.dollars[spec] > ours[FORCED].dollars[spec], spec


def test_rebuilding_and_windowing_cost_more_under_every_provider(
    results: list[LoopResult],
) -> None:
    by = {(r.scenario, r.loop): r for r in results}
    ours = by[("40-step session", "warmloop")]
    for loop in ("rebuild each step", "sliding window (12)"):
        theirs = by[("40-step session", loop)]
        assert theirs.cached_over_limit < 0.5
        for spec in PROVIDERS:
            assert theirs.dollars[spec] > ours.dollars[spec], (loop, spec)


def test_the_table_has_every_row_and_names_what_is_not_run_yet(
    results: list[LoopResult],
) -> None:
    table = markdown(results)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + len(results)
    assert "| 40-step session | warmloop | 40 |" in table
    for name in PENDING:
        assert name in table


def test_the_plot_is_a_png(results: list[LoopResult], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib (benchmarks/requirements.txt) is missing")
    out = plot(results, tmp_path / "cumulative_cost.png")
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_extension_points_say_what_they_wait_for() -> None:
    points = {"120-tool discovery session": discovery_120_tools}
    assert set(points) == set(PENDING)
    for name, build in points.items():
        with pytest.raises(NotImplementedError, match=re.escape(PENDING[name])):
            build()
