"""Checked by `mypy --strict` (pyproject's `[tool.mypy] packages` holds `tests`), never run:
what a user's type checker sees of `run.output` and `ctx.deps` (issue 32)."""

from __future__ import annotations

from typing import Any, assert_type

from pydantic import BaseModel

from tests.test_typed_outputs import City, Pair, Point
from tests.tools.test_run_context import Shop
from warmloop import Agent, Run, RunContext, ScriptedModel
from warmloop.outputs import SubmittedOutputs


def greet(ctx: RunContext[Shop], name: str) -> str:
    """Greet someone on the shop's behalf."""
    assert_type(ctx.deps, Shop)
    return f"{ctx.deps.owner} greets {name}"


def plain(ctx: RunContext[None]) -> str:
    """A tool of an agent run without deps."""
    assert_type(ctx.deps, None)
    return "ok"


def outputs_are_typed(model: ScriptedModel) -> None:
    assert_type(Agent(model, outputs=City).run_sync("t").output, City)
    assert_type(Agent(model, outputs=Point).run_sync("t").output, Point)
    assert_type(Agent(model, outputs=Pair).run_sync("t").output, Pair)
    assert_type(Agent(model, outputs=int).run_sync("t").output, int)
    assert_type(Agent(model, outputs=list[str]).run_sync("t").output, list[str])
    assert_type(Agent(model, outputs=list[City]).run_sync("t").output, list[City])
    # The named-fields forms keep what they had: the validated model, any field on it.
    assert_type(Agent(model).run_sync("t").output, Any)
    assert_type(Agent(model, outputs={"answer": str}).run_sync("t").output, Any)
    assert_type(Agent(model, outputs=City).run_sync("t").outputs, SubmittedOutputs)
    # Submit's arguments are a model whose fields mypy cannot know: each reads as Any
    # (the README's `outputs={"country": str}` then `run.outputs.country`, issue 45).
    assert_type(Agent(model, outputs={"country": str}).run_sync("t").outputs.country, Any)
    assert isinstance(Agent(model).run_sync("t").outputs, BaseModel)


async def deps_are_typed(model: ScriptedModel) -> None:
    agent = Agent(model, [greet], outputs=City, deps_type=Shop)
    assert_type(agent, Agent[Shop, City])
    run = await agent.run("t", deps=Shop("Bob"))
    assert_type(run, Run[City])
    assert_type(Agent(model, [plain]), Agent[None, Any])
    # A wrong deps= is refused (strict mypy also fails should this ignore become unused).
    await agent.run("t", deps="Bob")  # type: ignore[arg-type]
