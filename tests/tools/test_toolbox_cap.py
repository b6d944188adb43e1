"""A `Toolbox`'s own `max_result_chars` holds when it is an agent's tools: a run cuts each
result at the smaller of the toolbox's cap and the agent's (`"window"`, an int or None)."""

from __future__ import annotations

from typing import Literal

import pytest

from warmloop import Agent, ScriptedModel, Toolbox, ToolResult, call, tool
from warmloop.tools.invoke import cap_text

BIG = "x" * 1_000


@tool
def big() -> str:
    """Returns 1,000 characters."""
    return BIG


@pytest.mark.parametrize(
    ("toolbox_cap", "agent_cap", "expected"),
    [
        (200, "window", 200),  # a share of the scripted model's 128,000-token window is larger
        (200, None, 200),
        (200, 500, 200),
        (500, 200, 200),
        (None, 300, 300),
    ],
)
def test_a_run_cuts_at_the_smaller_of_the_toolbox_cap_and_the_agents(
    toolbox_cap: int | None, agent_cap: int | Literal["window"] | None, expected: int
) -> None:
    model = ScriptedModel([call("big"), call("submit", answer="done")])
    box = Toolbox([big], max_result_chars=toolbox_cap)
    agent = Agent(model, tools=box, max_result_chars=agent_cap)
    run = agent.run_sync("Fetch it.")
    (execution,) = run.truncated
    assert execution.truncated_from == len(BIG)
    assert execution.result.content == cap_text(BIG, expected)[0]
    assert len(execution.result.content) <= expected
    assert agent.result_cap(model.facts) == expected


def test_no_cap_anywhere_returns_the_whole_result() -> None:
    model = ScriptedModel([call("big"), call("submit", answer="done")])
    run = Agent(model, tools=Toolbox([big]), max_result_chars=None).run_sync("Fetch it.")
    assert run.truncated == []
    results = [m for m in run.transcript.messages if isinstance(m, ToolResult)]
    assert results[0].content == BIG
