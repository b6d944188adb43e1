"""`benchmarks.proxy_pause` in miniature: a tool past the TTL and a follow-up past it, with
the proxy's keep-alive and without; a keep-alive carries the tool's pause, the follow-up is
written for an hour once the first pause says it pays, the session costs less (priced by
the simulator), and the proxy's page counts the keep-alives' part of the saving."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.proxy_pause import main, session


def test_the_keep_alives_carry_both_pauses_and_cost_less_than_the_misses() -> None:
    args = argparse.Namespace(tool_minutes=8.0, away_minutes=8.0, system_tokens=8_000)
    on, off = session(args, True), session(args, False)
    assert (on.requests, off.requests) == (3, 3)
    assert on.keepalives == 1  # 270 s into the tool; the follow-up waits on an hour's TTL
    assert off.keepalives == 0
    assert (on.hour, off.hour) == (2, 0)  # the tool's result and the follow-up
    assert on.dollars < off.dollars
    # the page counts what the keep-alives saved; the hour's TTL saved the rest
    assert on.status_saved is not None
    assert 0 < on.status_saved < off.dollars - on.dollars


def test_the_benchmark_prints_both_arms(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--tool-minutes", "6", "--system-tokens", "5000"])
    out = capsys.readouterr().out
    assert "keep-alive on" in out
    assert "--no-keepalive" in out
    assert "keep-alive saved $" in out
