"""The usage a tool's `RunContext` is given each step is the run's requests so far, added up
as they are sent (not re-summed each step): at every step it must equal the full sum of
the requests before the call, whatever the number of steps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from warmloop import Agent, RunContext, ScriptedModel, call
from warmloop.facts.usage import Usage

seen: list[Usage] = []


def tally(ctx: RunContext[None], note: str) -> str:
    """Note something."""
    seen.append(ctx.usage)
    return note * 3


@settings(max_examples=15, deadline=None)
@given(notes=st.lists(st.text("abc", min_size=1, max_size=30), min_size=1, max_size=8))
def test_each_steps_usage_is_the_sum_of_the_requests_before_it(notes: list[str]) -> None:
    seen.clear()
    replies = [call("tally", note=note) for note in notes]
    model = ScriptedModel([*replies, call("submit", answer="x")])
    run = Agent(model, [tally]).run_sync("Tally.")
    assert len(seen) == len(notes)
    for step, usage in enumerate(seen, 1):
        assert usage == sum((r.usage for r in run.requests[:step]), Usage())
