"""The facts benchmark's claims, with every default: through a loopback host that
publishes its window the way vLLM does, a session of file-sized results reuses the whole
cacheable prefix, cuts nothing and rewrites nothing; a host that publishes nothing is
planned on the safe side and said to be unknown; and maintenance never costs more than
leaving a short session alone under any provider's rules."""

from __future__ import annotations

from benchmarks.facts import host_session, on_off


def test_a_host_that_publishes_its_window_is_used_as_a_user_would_leave_it() -> None:
    found = host_session(publish=True)
    assert (found["results cut"], found["rewrites"], found["warnings"]) == (0, 0, 0)
    assert found["requests"] == 21
    assert found["prefix reuse"] > 0.9999  # all but the closing brackets of the last request


def test_a_host_that_publishes_nothing_is_never_cut_or_rewritten_and_is_said_so() -> None:
    found = host_session(publish=False)
    assert (found["results cut"], found["rewrites"], found["warnings"]) == (0, 0, 1)
    assert found["prefix reuse"] > 0.9999  # all but the closing brackets of the last request


def test_maintenance_on_costs_no_more_than_off_on_a_short_file_session() -> None:
    rows = on_off(("20 file-sized results",))
    assert len(rows) == 4  # every priced provider
    assert all(row["on / off"] <= 1.005 for row in rows), rows
