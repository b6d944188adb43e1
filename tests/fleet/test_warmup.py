"""A batch's warm-up through OpenAI's `prompt_cache_options.prewarm` (issue 36): on a model
that takes it (GPT-5.6 and later, Responses) the warm-up is the first request a task's run
sends, marked `prewarm`, with no answer asked for and nothing appended to any conversation;
elsewhere nothing is sent and the batch's first task warms the cache instead.

Through the official SDK to a loopback server answering as the Responses API reference
documents ("The response object"), as `tests/keepalive/test_prewarm.py` does.
"""

from __future__ import annotations

from typing import Any

from tests.keepalive.test_prewarm import CITIES, gpt_5_6, prewarmed
from tests.support.wire_servers import WireServer
from warmloop import Agent, tool
from warmloop.fleet.warmup import prewarm_opening
from warmloop.keepalive.leader_first import written
from warmloop.messages import AssistantTurn, SystemText, UserText
from warmloop.providers.select import resolve_model


@tool
def run_tests() -> str:
    """Run the test suite."""
    return "2 failed"


async def test_the_warm_up_is_the_first_request_as_a_prewarm_and_appends_nothing(
    wire_server: WireServer,
) -> None:
    bodies: list[dict[str, Any]] = []
    agent = Agent(
        gpt_5_6(wire_server, bodies), [run_tests], outputs={"answer": str}, instructions=CITIES
    )
    usage = await prewarm_opening(agent, "Run the tests.", "b1-0-tests")
    assert usage is not None
    assert usage.output_tokens == 0  # nothing generated
    assert written(usage)  # the usage shows the opening cached: the batch fans out
    run = await agent.run("Run the tests.", conversation_id="b1-0-tests")
    warm, first, *_ = bodies
    assert [prewarmed(body) for body in bodies] == [True, False, False]
    # The warm-up is the run's first request byte for byte (its routing key included),
    # marked prewarm, with no answer asked for.
    assert warm == {**first, "prompt_cache_options": {"prewarm": True}}
    assert warm["prompt_cache_key"] == "b1-0-tests"
    assert "max_output_tokens" not in warm
    # Nothing appended: the run's conversation is its own two turns after its opening.
    kinds = [type(m) for m in run.transcript]
    assert kinds[:2] == [SystemText, UserText]
    assert sum(isinstance(m, AssistantTurn) for m in run.transcript) == 2


async def test_a_model_that_takes_no_prewarm_sends_nothing(wire_server: WireServer) -> None:
    for spec in ("openai:gpt-5", "openai-chat:gpt-5.6-sol"):  # the model, the wire format
        agent = Agent(resolve_model(spec, api_key="offline"), [run_tests], instructions=CITIES)
        assert await prewarm_opening(agent, "Run the tests.", "b1-0-tests") is None, spec
