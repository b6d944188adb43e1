"""`benchmarks.stall` in miniature: every arm runs its runs and the report carries each
arm's figures and the session / no-session ratios (the timings themselves are the
benchmark's, never a test's)."""

from __future__ import annotations

import os

import pytest

from benchmarks.stall import POSTGRES_VARIABLE, Plan, main, measure, report


def test_the_stall_benchmark_measures_every_arm_and_reports_its_ratio() -> None:
    postgres = os.environ.get(POSTGRES_VARIABLE, "").strip() or None
    arms, skipped = measure(Plan(runs=5, steps=2, latency=0.001), postgres)
    labels = ["no session", "session= on SQLite"]
    if postgres is not None:
        labels.append("session= on PostgreSQL")
        assert skipped is None
    else:
        assert skipped is not None
    assert [arm.label for arm in arms] == labels
    for arm in arms:
        assert arm.runs == 5
        assert arm.largest >= arm.p99 >= 0
    text = report(arms, skipped)
    for label in labels[1:]:
        assert f"ratio {label} / no session: largest stall " in text


def test_the_stall_benchmark_says_why_postgresql_was_skipped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(POSTGRES_VARIABLE, raising=False)
    main(["--runs", "3", "--steps", "1", "--latency", "1"])
    out = capsys.readouterr().out
    assert "ratio session= on SQLite / no session: largest stall " in out
    assert "PostgreSQL: skipped (no server: set $WARMLOOP_TEST_POSTGRES or pass --postgres" in out
