"""`benchmarks.keepalive` in miniature: every arm is priced on every provider, the rule
costs no more than leaving the cache alone on these sessions, every arm costs the same
where the cache outlives every pause (DeepSeek), and the table and plot are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.keepalive import ARMS, PROVIDERS, main, measure


def test_every_arm_is_priced_on_every_provider_and_none_costs_the_most() -> None:
    results = measure(6, seed=3)
    assert list(results) == [p.label for p in PROVIDERS]
    for label, row in results.items():
        assert list(row) == [name for name, _ in ARMS]
        assert all(value > 0 for value in row.values())
        assert row["warmloop"] <= row["none"] * 1.0001, label
    deepseek = results["DeepSeek chat (disk)"]
    assert len(set(round(v, 9) for v in deepseek.values())) == 1  # nothing to keep alive


def test_the_benchmark_prints_its_table_and_writes_the_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "keepalive.png"
    main(["--sessions", "3", "--seed", "1", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert "| Anthropic Sonnet 4.6 (5m, 1h sold) |" in out
    assert plot.stat().st_size > 0


def test_the_optimum_costs_no_more_than_any_arm_on_any_provider() -> None:
    """It knows every pause and has every option the other arms use (a longer retention,
    pinging through, going cold), so no arm beats it: not always-24h where writes are
    free (the longer retention costs the same, and the tie goes to it)."""
    for seed in (1, 2, 3):
        for label, row in measure(8, seed=seed).items():
            for name, value in row.items():
                assert row["optimum"] <= value * (1 + 1e-9), (seed, label, name)
