"""Handoffs (`handoffs=`): a `transfer_to_<name>` call passes the conversation to another
agent, which goes on with every message so far under the same routing key, with the run's
deps, to its own end; a target with the same tools and outputs reads the whole prefix."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from warmloop import (
    Agent,
    ConfigurationError,
    RunContext,
    ScriptedModel,
    ToolResult,
    call,
    handoff,
    tool,
)
from warmloop.messages import UserText
from warmloop.providers.scripted import Reply

SONNET = "anthropic:claude-sonnet-4-6"


@dataclass
class Shop:
    name: str


@tool
def lookup(ctx: RunContext[Shop], order: str) -> str:
    """Look an order up.

    Args:
        order: The order number.
    """
    return f"{ctx.deps.name} order {order}: paid twice"


@pytest.mark.moves_cache_prefix(reason="the target's tool block differs from the caller's")
def test_the_target_goes_on_with_the_whole_conversation_and_the_run_ends_with_its_outputs() -> None:
    told: list[Shop] = []
    caller = ScriptedModel(
        [
            call("lookup", order="7"),
            Reply(calls=(("transfer_to_refunds", "{}"), ("lookup", '{"order": "8"}'))),
        ],
        name=SONNET,
    )
    target = ScriptedModel(
        [call("lookup", order="7"), call("submit", answer="refunded")], name=SONNET
    )
    refunds = Agent(target, [lookup], name="Refunds", instructions="Refund double payments.")
    triage = Agent(
        caller,
        [lookup],
        name="Triage",
        deps_type=Shop,
        handoffs=[handoff(refunds, on_handoff=lambda ctx: told.append(ctx.deps))],
    )
    run = triage.run_sync("Charged twice for order 7.", deps=Shop("acme"))

    assert run.output == "refunded"
    assert told == [Shop("acme")]
    [child] = run.children
    assert (child.agent, child.kind, child.call_id) == ("Refunds", "handoff", "call_1_0")
    # The target's first request holds every message of the caller's, and its hand-on turn.
    first = target.requests[0].payload["messages"]
    assert (
        first[: len(caller.requests[1].payload["messages"])]
        == (caller.requests[1].payload["messages"])
    )
    results = [m for m in run.transcript if isinstance(m, ToolResult)]
    assert [r.content for r in results[1:3]] == [
        "Transferred to Refunds; it goes on from here.",
        "Not executed: the conversation was handed to Refunds.",
    ]
    handed = [m for m in run.transcript if isinstance(m, UserText)][-1]
    assert "Refund double payments." in handed.text
    assert set(target.sessions) == set(caller.sessions)  # one conversation, one routing key
    assert results[-2].content == "acme order 7: paid twice"  # the run's deps, carried on


def test_a_target_with_the_same_tools_and_outputs_reads_the_whole_prefix() -> None:
    model = ScriptedModel(
        [call("transfer_to_refunds"), call("submit", answer="refunded")], name=SONNET
    )
    name_only = Agent(model, name="Refunds")  # the handoff tool reads only its name
    tools = [lookup, handoff(name_only).tool()]
    refunds = Agent(model, tools, name="Refunds", deps_type=Shop)
    triage = Agent(model, [lookup], name="Triage", deps_type=Shop, handoffs=[refunds])
    run = triage.run_sync("Charged twice for order 7.", deps=Shop("acme"))
    assert run.output == "refunded"
    [child] = run.children
    assert child.run is not None
    caller_prompt = run.requests[0].usage.prompt_tokens
    assert child.run.requests[0].usage.cache_read_tokens >= caller_prompt
    assert triage.busts == refunds.busts == []


def test_a_handoff_is_named_for_its_agent_or_as_told() -> None:
    model = ScriptedModel(name=SONNET)
    assert handoff(Agent(model, name="Billing Desk")).tool_name == "transfer_to_billing_desk"
    assert handoff(Agent(model), tool_name_override="escalate").tool_name == "escalate"
    with pytest.raises(ConfigurationError, match="needs the target agent's name"):
        handoff(Agent(model))
    with pytest.raises(ConfigurationError, match="takes agents and handoff"):
        Agent(model, handoffs=["billing"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="runs without session="):
        Agent(model, handoffs=[Agent(model, name="b")]).run_sync("x", session="s")
