"""Agents that call agents (`Agent.as_tool`, `fan_out`, a tool awaiting another agent's run):
each child is recorded in its parent's run (a cost row, usage that adds up, what the
calling run's later tools see), routes under a key derived from the parent's that its
siblings share, and a fan-out's first child goes alone until its usage shows the opening
cached."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest

from warmloop import Agent, RunContext, ScriptedModel, call, tool
from warmloop.agent.delegation import fan_out
from warmloop.facts.usage import Usage
from warmloop.messages import ToolResult
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.scripted import Reply

SONNET = "anthropic:claude-sonnet-4-6"


def explorer_model() -> ScriptedModel:
    """Replies by what each request holds, so children may ask in any order: a look at the
    task's area first, then the answer naming it."""

    def reply(rendered: Rendered) -> Reply:
        messages = rendered.payload["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        if messages[-1]["role"] == "user":
            return call("look", area=task)
        return call("submit", answer=f"seen {task}")

    return ScriptedModel([reply] * 40, name=SONNET)


@tool
def look(area: str) -> str:
    """Look at an area of the code.

    Args:
        area: Where to look.
    """
    return f"{area}: three functions"


def explorer(model: ScriptedModel) -> Agent:
    return Agent(model, [look], name="explorer", instructions="Explore what you are asked.")


def test_a_sub_agents_run_is_a_child_of_the_calling_run_and_its_usage_adds_up() -> None:
    child_model = explorer_model()
    seen: list[Usage] = []

    @tool
    def tally(ctx: RunContext[None]) -> str:
        """Say how much the run used so far."""
        seen.append(ctx.usage)
        return "noted"

    parent_model = ScriptedModel(
        [call("explorer", task="parser"), call("tally"), call("submit", answer="planned")],
        name=SONNET,
    )
    parent = Agent(parent_model, [explorer(child_model).as_tool(), tally], name="planner")
    run = parent.run_sync("Plan the change.")

    [child] = run.children
    assert (child.agent, child.call_id, child.task, child.kind) == (
        "explorer",
        "call_0_0",
        "parser",
        "delegated",
    )
    assert child.run is not None
    assert child.run.output == "seen parser"
    result = next(m for m in run.transcript if isinstance(m, ToolResult) and m.name == "explorer")
    assert result.content == "seen parser"
    own = run.usage
    assert run.tree_usage == own + child.run.usage
    # The tally ran after the child: what it was told includes the child's requests.
    first_request = run.requests[0].usage + run.requests[1].usage
    assert seen == [first_request + child.run.usage]
    report = run.cost()
    [row] = report.children
    assert row.name == "explorer (delegated, call_0_0)"
    assert row.report.total == child.run.cost().total
    assert report.total is not None
    assert row.report.total is not None
    assert report.tree_total == pytest.approx(report.total + row.report.total)
    assert "tree total" in report.describe()


def test_siblings_share_a_routing_key_derived_from_the_parents_and_no_other_agent_does() -> None:
    child_model, other_model = explorer_model(), explorer_model()
    parent_model = ScriptedModel(
        [
            call("explore", tasks=["lexer", "parser", "printer"]),
            call("review", task="printer"),
            call("submit", answer="planned"),
        ],
        name=SONNET,
    )
    reviewer = Agent(other_model, [look], name="review", instructions="Review what you are asked.")
    tools = [explorer(child_model).as_tool("explore", parallel=True), reviewer.as_tool()]
    run = Agent(parent_model, tools).run_sync("Plan the change.")

    parent_key = parent_model.sessions[0]
    assert set(parent_model.sessions) == {parent_key}
    [sibling_key] = set(child_model.sessions)
    [review_key] = set(other_model.sessions)
    assert sibling_key.startswith(parent_key[:40])
    assert sibling_key != parent_key
    assert review_key.startswith(parent_key[:40])
    assert review_key != sibling_key
    outputs = json.loads(next(m.content for m in run.transcript if isinstance(m, ToolResult)))
    assert outputs == ["seen lexer", "seen parser", "seen printer"]
    assert [c.task for c in run.children[:3]] == ["lexer", "parser", "printer"]
    # Each sibling's first request reads the opening its leader left under the shared key.
    first_requests = [r.usage for c in run.children[1:3] if c.run for r in c.run.requests[:1]]
    assert all(u.cache_read_tokens > 0 for u in first_requests)


@dataclass
class Answered:
    task: str
    request: int


def test_the_first_child_goes_alone_until_its_usage_shows_the_opening_cached() -> None:
    """The scripted model reports reads only (as older OpenAI models do): the leader's first
    request writes, its second shows a read, and only then do the others start."""
    child_model = explorer_model()
    order: list[str] = []
    original = child_model.send

    async def send(rendered: Rendered, *, session_id: str) -> ModelResponse:
        messages = rendered.payload["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        order.append(f"{task}:{sum(m['role'] == 'assistant' for m in messages)}")
        return await original(rendered, session_id=session_id)

    child_model.send = send  # type: ignore[method-assign]

    @tool
    async def explore(ctx: RunContext[None], areas: list[str]) -> str:
        """Explore each area at once.

        Args:
            areas: The areas.
        """
        runs = await fan_out(explorer(child_model), areas)
        return "; ".join(str(r.output) for r in runs)

    parent_model = ScriptedModel(
        [call("explore", areas=["a", "b", "c", "d"]), call("submit", answer="ok")], name=SONNET
    )
    Agent(parent_model, [explore]).run_sync("Plan.")

    assert order[:2] == ["a:0", "a:1"]  # the leader's first and second request
    assert sorted(order[2:]) == ["b:0", "b:1", "c:0", "c:1", "d:0", "d:1"]


def test_a_sub_agent_tool_has_no_time_limit_unless_given_one() -> None:
    """A child's run is bounded by its own max_steps; a toolbox's default 120 s would cut
    a sub-agent that runs the test suite (the subagents benchmark's slow explorer)."""
    child = explorer(explorer_model())
    assert child.as_tool().timeout == math.inf
    assert child.as_tool(timeout=600).timeout == 600
