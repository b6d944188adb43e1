"""The cold resume the keep-alive rule weighs is the one the run would make (issue 49): with
maintenance, a resume after the cache went cold prunes first, so a miss re-sends only what
the prune leaves. The agent hands the rule that size (the prompt less what the prune would
drop); a size that grew instead would make it ping through pauses where going cold costs
less. The same run with and without maintenance, through a tool that never ends: the
keep-alives one miss pays for, each on the fake clock as it falls due."""

from __future__ import annotations

from tests.keepalive.test_ping_counts import costs_of, held_for_hours
from warmloop import call, tool
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.maintenance.prune import PrunePolicy

PRUNING = MaintenancePolicy(prune=PrunePolicy(tail_tokens=2_000, tail_messages=4))


@tool
def read(path: str) -> str:
    """Read a file."""
    return f"<{path}>" + "content " * 2_000  # about 4,000 tokens, prunable once read


async def keepalives(reads: int, maintenance: MaintenancePolicy | None) -> tuple[int, int]:
    """Keep-alives through an endless tool call after `reads` file reads, and the ones a
    miss of the whole prompt pays for."""
    steps = [call("read", path=f"{n}.txt") for n in range(reads)]
    run, inner, _ = await held_for_hours(steps, [read], maintenance=maintenance)
    before_the_tool = run.requests[-2].usage.prompt_tokens
    return len(inner.keepalives), costs_of(before_the_tool).pings_paid_for


async def test_a_resume_that_would_prune_half_the_prompt_is_worth_fewer_keep_alives() -> None:
    unpruned, cap = await keepalives(4, None)
    pruned, _ = await keepalives(4, PRUNING)
    assert unpruned == cap > 2
    assert 0 < pruned < unpruned


async def test_a_resume_that_would_prune_almost_all_is_cheaper_than_any_keep_alive() -> None:
    unpruned, cap = await keepalives(16, None)
    pruned, _ = await keepalives(16, PRUNING)
    assert unpruned == cap > 2
    assert pruned == 0
