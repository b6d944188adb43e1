"""`benchmarks.proxy_returns` in miniature (issue 46, must-show 4): one-shot jobs that never
come back, then interactive sessions, through the proxy's keep-alive on a faked clock. As
built, the jobs stop costing keep-alives after the first few and the sessions keep theirs;
before issue 46, every job was pinged to the rent-or-buy cap and the daily cap ran out."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.proxy_returns import main, run_arm


def test_one_shot_jobs_stop_costing_keep_alives_and_sessions_keep_theirs() -> None:
    args = argparse.Namespace(headless=14, interactive=3, turns=3, think_minutes=6.0, first=7)
    learned, before = run_arm(args, True), run_arm(args, False)
    assert learned.later_jobs == 0  # jobs 8 to 14: nothing
    assert 0 < learned.first_jobs <= before.first_jobs
    assert before.later_jobs > 0
    assert learned.interactive > 0
    assert learned.warm >= before.warm
    assert learned.job_usd + learned.interactive_usd < before.job_usd + before.interactive_usd


def test_the_benchmark_prints_both_arms(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--headless", "6", "--interactive", "2", "--turns", "2"])
    out = capsys.readouterr().out
    assert "as built" in out
    assert "before issue 46" in out
