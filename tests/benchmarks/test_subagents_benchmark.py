"""`python -m benchmarks subagents` and `approval` in miniature: one tree and three in a row
under Anthropic's rules, warmloop within 5% of the offline optimum (the third tree at its
cost: by then the agents have seen how soon each opening is used again), and the
independent children above it; an approval across two real processes, the resumed request reading
what the keep-alives kept and the miss costing more than they did."""

from __future__ import annotations

import pytest

from benchmarks.approval_process import flow
from benchmarks.subagents import RULES, measured


@pytest.mark.parametrize("trees", [1, 3])
def test_the_tree_costs_within_five_percent_of_the_optimum(trees: int) -> None:
    ours, best, theirs = measured(RULES["Anthropic (Sonnet 4.6, 5m)"], trees)
    assert ours.dollars <= 1.05 * best.dollars
    assert ours.last_tree <= 1.01 * best.last_tree
    assert best.dollars <= ours.dollars + 1e-9  # the optimum is a bound
    assert theirs.dollars > 1.3 * ours.dollars
    assert ours.keepalives == 2 * trees  # the planner's wait and the slow explorer's tests
    assert ours.written is not None
    assert theirs.written is not None
    assert ours.written * 3 < theirs.written  # one opening written, not four


def test_an_approval_in_another_process_reads_what_the_keep_alives_kept() -> None:
    kept, cold = flow(10.0, True), flow(10.0, False)
    assert kept.pings == 2  # 4.5 and 9 minutes
    assert kept.resumed.cache_read_tokens == kept.prompt
    assert cold.pings == 0
    assert cold.resumed.cache_read_tokens == 0
    assert kept.ping_dollars < cold.resumed_dollars - kept.resumed_dollars
