"""The public benchmark page's chart (issue 48): drawn from the committed results of the last
`proxy_corpus --results` run, one row per driver, warmloop's own loop among them."""

from __future__ import annotations

from pathlib import Path

from benchmarks.corpus_chart import OWN, RESULTS, draw, load
from benchmarks.framework_corpus.record import DRIVERS


def test_the_results_hold_a_row_per_driver_and_warmloops_own_loop_on_each_wire() -> None:
    rows = load(RESULTS)
    assert {str(r["framework"]) for r in rows} == {d.stem for d in DRIVERS.glob("*.py")}
    own = {str(r["wire"]): r for r in rows if str(r["framework"]).startswith(OWN)}
    assert set(own) == {"chat", "responses", "messages"}


def test_the_chart_is_drawn_from_the_rows(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    draw(load(RESULTS), chart)
    assert chart.read_bytes().startswith(b"\x89PNG")
