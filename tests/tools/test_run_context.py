"""Tool context (issue 32): a tool whose first parameter is a `RunContext` gets the run's
deps, transcript so far, usage and the model's facts, wherever it is called (a core tool,
a catalog tool through call_tool, sync or async); the parameter never reaches the schema."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from warmloop import Agent, RunContext, ScriptedModel, Tool, Toolbox, ToolCall, ToolResult, call


@dataclass
class Shop:
    owner: str


seen: list[RunContext[object]] = []


def greet(ctx: RunContext[Shop], name: str, loud: bool = False) -> str:
    """Greet someone on the shop's behalf.

    Args:
        name: Who to greet.
        loud: Shout it.
    """
    seen.append(ctx)  # type: ignore[arg-type]
    text = f"{ctx.deps.owner} greets {name}"
    return text.upper() if loud else text


def greet_plain(name: str, loud: bool = False) -> str:
    """Greet someone on the shop's behalf.

    Args:
        name: Who to greet.
        loud: Shout it.
    """
    return name


async def count(ctx: RunContext[None]) -> str:
    """Count the messages so far."""
    seen.append(ctx)  # type: ignore[arg-type]
    return str(len(ctx.messages))


@pytest.fixture(autouse=True)
def forget() -> None:
    seen.clear()


def results(run: object) -> list[str]:
    return [m.content for m in run.transcript.messages if isinstance(m, ToolResult)]  # type: ignore[attr-defined]


def test_ctx_is_never_in_the_schema_the_bytes_equal_the_plain_tools() -> None:
    with_ctx = Tool.from_function(greet).spec
    without = Tool.from_function(greet_plain, name="greet").spec
    assert json.dumps(with_ctx.full()) == json.dumps(without.full())
    assert Tool.from_function(count).spec.parameters["properties"] == {}


def test_ctx_reaches_the_tool_with_the_runs_deps_transcript_usage_and_facts() -> None:
    model = ScriptedModel([call("greet", name="Ann"), call("count"), call("submit", answer="x")])
    agent = Agent(model, [greet, count], deps_type=Shop)
    shop = Shop("Bob")
    run = agent.run_sync("Greet Ann.", deps=shop)
    assert results(run)[:2] == ["Bob greets Ann", "5"]
    first, second = seen
    assert first.deps is shop
    assert first.step == 1
    assert second.step == 2
    # The transcript so far: the opening and the turn that made the call, not its result.
    assert len(first.messages) == 3
    assert isinstance(first.messages, tuple)
    assert first.messages == tuple(run.transcript.messages[:3])
    assert first.usage == run.requests[0].usage
    assert second.usage == run.requests[0].usage + run.requests[1].usage
    assert first.facts is not None
    assert first.facts == model.facts


async def test_an_async_tool_and_a_run_without_deps_get_none() -> None:
    model = ScriptedModel([call("count"), call("submit", answer="x")])
    run = await Agent(model, [count]).run("Count.")
    assert results(run)[0] == "3"
    assert seen[0].deps is None


async def test_a_catalog_tool_called_through_call_tool_gets_ctx() -> None:
    model = ScriptedModel(
        [
            call("search_tools", query="greet"),
            call("call_tool", name="greet", arguments={"name": "Cy"}),
            call("submit", answer="x"),
        ]
    )
    run = await Agent(model, Toolbox(catalog=[greet]), deps_type=Shop).run("t", deps=Shop("Di"))
    assert "Di greets Cy" in results(run)
    assert seen[0].deps == Shop("Di")


async def test_a_tool_run_outside_a_run_gets_a_context_without_deps() -> None:
    result = await Toolbox([count]).execute(ToolCall("c1", "count", "{}"))
    assert result.content == "0"
    assert seen[0].deps is None
    assert seen[0].facts is None
