"""`benchmarks.keepalive` in miniature: every arm is priced on every provider, the rule
costs no more than leaving the cache alone on these sessions, every arm costs the same
where the cache outlives every pause (DeepSeek), and the table and plot are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.keepalive import ARMS, WarmloopArm, main, measure
from benchmarks.keepalive_sessions import MODEL_SECONDS, PROVIDERS, Step, sessions


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


def test_the_warmloop_arm_sends_the_retention_the_live_agent_sends() -> None:
    # A longer TTL per request where a request carries one: Anthropic's markers, GPT-5.6's
    # `prompt_cache_options.ttl` (where `12h` is sold); elsewhere the session's one
    # retention: GPT-5's free `24h` (asked for by default), GPT-5.5's `24h`.
    waits = [Step(500, "tool:ask_approval", 3_000.0) for _ in range(6)]
    drawn = [[*waits, Step(500, "end", 0.0, waited=False)], *sessions(12, seed=5)]
    sent = {}
    for provider in PROVIDERS:
        arm = WarmloopArm()
        plans = [plan for s in drawn for plan in arm(provider.profile, s, 8.0)]
        sent[provider.label] = {plan.retention.name for plan in plans}
    assert sent == {
        "Anthropic Sonnet 4.6 (5m, 1h sold)": {"5m", "1h"},
        "OpenAI GPT-5 (in-memory, 24h free)": {"24h"},
        "OpenAI GPT-5.5 (24h)": {"24h"},
        "OpenAI GPT-5.6 (30m, 12h sold)": {"30m", "12h"},
        "OpenAI GPT-5.6 (30m only)": {"30m"},
        "DeepSeek chat (disk)": {"disk"},
    }


def test_the_warmloop_arm_learns_gaps_within_runs_and_follow_ups_after_them() -> None:
    approval, tests, away = 3_000.0, 200.0, 5_000.0
    steps = [
        Step(500, "tool:ask_approval", approval),
        Step(500, "followup", away, waited=False),  # the run's last request
        Step(500, "tool:run_tests", tests),  # the follow-up run's first
        Step(500, "end", 0.0, waited=False),
    ]
    arm = WarmloopArm()
    plans = arm(PROVIDERS[0].profile, steps, 5.0)
    # The gap to a request is learned as it goes out, after its TTL is chosen: the
    # approval's reaches only the follow-up run. Its last request is where the first run
    # ended (its second), and that run's follow-up came after more than an hour: no 1h.
    assert [plan.retention.name for plan in plans] == ["5m", "5m", "1h", "5m"]
    assert list(arm.learned.gaps) == [approval + MODEL_SECONDS, tests + MODEL_SECONDS]
    assert list(arm.learned.follow_ups) == [away + MODEL_SECONDS]
    ends = [(end.requests, end.first, end.followed) for end in arm.learned.run_ends]
    assert ends == [(2, True, True), (2, False, False)]
    assert {kind: list(seen) for kind, seen in arm.learned.pauses.items()} == {
        "tool:ask_approval": [approval],
        "tool:run_tests": [tests],
    }
