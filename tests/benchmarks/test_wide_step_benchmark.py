"""The wide Anthropic step (issue 36): an agent with one earlier run does not price its
follow-up over that run's length (it pruned the 8-request follow-up of A60w warm at request
45, 0.783 of maintenance off against 0.746); a first run counts the wide step's 60 calls in
its age and prunes where the step budget and nine earlier runs do (0.833 of maintenance off
to 0.736 when its age counted requests); the wide step's results are pruned on the request
they leave the protected tail, 12, not once their excess caught up, 16 (issue 48: 0.713)."""

from __future__ import annotations

from benchmarks.wide_step import ANTHROPIC, session


def test_a_follow_up_after_one_run_is_not_pruned_warm_for_that_run_s_length() -> None:
    found = session(ANTHROPIC, True, follow_up=True)
    assert len(found.requests) == 46  # 38 requests of the run, 8 of its follow-up
    assert found.prune_points() == [12, 20, 29]  # none in the follow-up (45 before)


def test_nine_earlier_runs_let_the_wide_step_be_pruned_where_it_pays() -> None:
    assert session(ANTHROPIC, True, follow_up=False, earlier=9).prune_points() == [12, 20, 29]


def test_a_first_run_prunes_the_wide_step_where_it_pays() -> None:
    # Before request 12 the run is 70 steps of work old (6 + 60 + 4 calls), not 11.
    assert session(ANTHROPIC, True, follow_up=False).prune_points() == [12, 20, 29]
