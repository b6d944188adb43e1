"""Tool errors as a pydantic-ai user expects (issue 45): `ModelRetry` raised in a tool
tells the model, and the run goes on; any other exception ends the run (`RunAborted`
caused by `ToolRaised`, the transcript closed), unless the tool (`errors_to_model=True`)
or the agent (`tool_errors_to_model=True`) sends errors to the model. The same holds for a
catalog tool called through the gateway."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from warmloop import (
    Agent,
    ConfigurationError,
    ModelRetry,
    RunAborted,
    ScriptedModel,
    Toolbox,
    ToolFailed,
    ToolRaised,
    call,
    check_pairing,
    tool,
)
from warmloop.messages import Message, ToolCall, ToolResult


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    if city == "Atlantis":
        raise ModelRetry("No city named Atlantis: ask for a real city.")
    if city == "Nowhere":
        raise ToolFailed("the atlas has no page for it")
    raise ValueError("database is down")


@tool(errors_to_model=True)
def forgiving(city: str) -> str:
    """Return the country a city is in, its failures told to the model."""
    raise ValueError("database is down")


def results(messages: Sequence[Message]) -> list[ToolResult]:
    return [m for m in messages if isinstance(m, ToolResult)]


def test_model_retry_tells_the_model_and_the_run_goes_on() -> None:
    model = ScriptedModel([call("lookup", city="Atlantis"), call("submit", answer="none")])
    run = Agent(model, [lookup]).run_sync("Where is Atlantis?")
    told = results(run.transcript.messages)[0]
    assert told.is_error
    assert told.content == "No city named Atlantis: ask for a real city."
    assert run.output == "none"


def test_a_tool_that_reports_failure_tells_the_model() -> None:
    model = ScriptedModel([call("lookup", city="Nowhere"), call("submit", answer="none")])
    run = Agent(model, [lookup]).run_sync("Where is Nowhere?")
    assert results(run.transcript.messages)[0].content == (
        "lookup failed: the atlas has no page for it"
    )


def test_any_other_exception_ends_the_run_with_the_transcript() -> None:
    model = ScriptedModel([call("lookup", city="Paris"), call("submit", answer="France")])
    with pytest.raises(
        RunAborted, match="tool 'lookup' raised ValueError: database is down"
    ) as info:
        Agent(model, [lookup]).run_sync("Where is Paris?")
    assert len(model.requests) == 1  # the model never heard of it
    raised = info.value.__cause__
    assert isinstance(raised, ToolRaised)
    assert isinstance(raised.error, ValueError)
    assert raised.__cause__ is raised.error
    messages = info.value.transcript.messages
    check_pairing(messages)
    assert results(messages)[-1].content.startswith("Not executed")


def test_the_tool_may_send_its_errors_to_the_model() -> None:
    model = ScriptedModel([call("forgiving", city="Paris"), call("submit", answer="?")])
    run = Agent(model, [forgiving]).run_sync("Where is Paris?")
    told = results(run.transcript.messages)[0]
    assert told.content == "forgiving failed: ValueError: database is down"


def test_the_agent_may_send_every_tools_errors_to_the_model() -> None:
    model = ScriptedModel([call("lookup", city="Paris"), call("submit", answer="?")])
    run = Agent(model, [lookup], tool_errors_to_model=True).run_sync("Where is Paris?")
    assert results(run.transcript.messages)[0].content == (
        "lookup failed: ValueError: database is down"
    )


def test_a_tools_own_word_wins_over_the_agents() -> None:
    @tool(errors_to_model=False)
    def strict(city: str) -> str:
        """Raises, and ends the run whatever the agent says."""
        raise ValueError("database is down")

    model = ScriptedModel([call("strict", city="Paris"), call("submit", answer="?")])
    with pytest.raises(RunAborted):
        Agent(model, [strict], tool_errors_to_model=True).run_sync("Where is Paris?")


def test_a_catalog_tool_raising_ends_the_run_too() -> None:
    box = Toolbox(catalog=[lookup])
    model = ScriptedModel(
        [
            call("search_tools", query="country city"),
            call("call_tool", name="lookup", arguments={"city": "Paris"}),
            call("submit", answer="?"),
        ]
    )
    with pytest.raises(RunAborted) as info:
        Agent(model, box).run_sync("Where is Paris?")
    assert isinstance(info.value.__cause__, ToolRaised)


async def test_a_direct_call_raises_as_a_run_would() -> None:
    with pytest.raises(ToolRaised):
        await Toolbox([lookup]).execute(ToolCall("c", "lookup", '{"city": "Paris"}'))
    told = await Toolbox([lookup]).execute(ToolCall("c", "lookup", '{"city": "Atlantis"}'))
    assert told.is_error


def test_errors_to_model_must_be_a_bool() -> None:
    with pytest.raises(ConfigurationError, match="errors_to_model"):
        tool(errors_to_model="yes")  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="tool_errors_to_model"):
        Agent(ScriptedModel(), tool_errors_to_model=1)  # type: ignore[arg-type]
