"""`benchmarks.proxy_pause` in miniature: a tool past the TTL and a follow-up past it, with
the proxy's keep-alive and without; the keep-alives are sent, the session costs less with
them (priced by the simulator), and the proxy's own figure agrees with the simulator's."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.proxy_pause import main, session


def test_the_keep_alives_carry_both_pauses_and_cost_less_than_the_misses() -> None:
    args = argparse.Namespace(tool_minutes=8.0, away_minutes=8.0, system_tokens=8_000)
    on, off = session(args, True), session(args, False)
    assert (on.requests, off.requests) == (3, 3)
    assert on.keepalives == 2  # one at 270 s into each pause
    assert off.keepalives == 0
    assert on.dollars < off.dollars
    assert on.status_saved == pytest.approx(off.dollars - on.dollars, rel=0.01)


def test_the_benchmark_prints_both_arms(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--tool-minutes", "6", "--system-tokens", "5000"])
    out = capsys.readouterr().out
    assert "keep-alive on" in out
    assert "--no-keepalive" in out
    assert "keep-alive saved $" in out
