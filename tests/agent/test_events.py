"""A run consumed as its events (issue 32): `agent.iter` yields them in the order they
happen, the finished run at the end; `on_message`, `on_maintenance` and `on_event` see the
same events."""

from __future__ import annotations

import asyncio

import pytest

from tests.maintenance import test_maintenance as pruning
from warmloop import (
    Agent,
    CacheBust,
    ConfigurationError,
    Event,
    FinalOutput,
    Maintained,
    MessageAppended,
    Reply,
    RequestAnswered,
    RequestSent,
    RunAborted,
    ScriptedModel,
    TextDelta,
    ToolCallDelta,
    ToolFinished,
    ToolStarted,
    call,
)
from warmloop.messages import AssistantTurn, Message, ToolResult


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def script() -> ScriptedModel:
    return ScriptedModel(
        [Reply(text="Adding.", calls=(("add", '{"a": 1, "b": 2}'),)), call("submit", answer="3")]
    )


def kinds(events: list[Event]) -> list[str]:
    return [type(event).__name__ for event in events]


async def read(agent: Agent, task: str = "Sum 1 and 2.") -> tuple[list[Event], object]:
    async with agent.iter(task) as events:
        seen = [event async for event in events]
    return seen, events.run


def test_iter_yields_the_run_in_order_and_the_run_at_the_end() -> None:
    seen, run = asyncio.run(read(Agent(script(), [add])))
    assert kinds(seen) == [
        "MessageAppended",  # the instructions
        "MessageAppended",  # the task
        "RequestSent",
        "TextDelta",
        "ToolCallDelta",
        "RequestAnswered",
        "MessageAppended",  # the turn
        "ToolStarted",
        "ToolFinished",
        "MessageAppended",  # the result
        "RequestSent",
        "ToolCallDelta",
        "PartialOutput",  # the submit call, parsed
        "RequestAnswered",
        "MessageAppended",
        "MessageAppended",
        "FinalOutput",
    ]
    assert seen[3] == TextDelta("Adding.")
    assert seen[4] == ToolCallDelta(0, "add", "call_0_0", '{"a": 1, "b": 2}')
    started, finished = seen[7], seen[8]
    assert isinstance(started, ToolStarted)
    assert started.call.name == "add"
    assert isinstance(finished, ToolFinished)
    assert finished.result.content == "3"
    final = seen[-1]
    assert isinstance(final, FinalOutput)
    assert final.run is run
    assert final.outputs.model_dump() == {"answer": "3"}
    answered = [e for e in seen if isinstance(e, RequestAnswered)]
    assert [e.request for e in answered] == [1, 2]
    assert [e.record for e in answered] == final.run.requests
    assert answered[1].usage.cache_read_tokens > 0  # the second extends the first


def test_on_message_sees_exactly_the_messages_the_events_carry() -> None:
    messages: list[Message] = []
    events: list[Event] = []
    agent = Agent(script(), [add], on_message=messages.append, on_event=events.append)
    run = agent.run_sync("Sum 1 and 2.")
    carried = [e.message for e in events if isinstance(e, MessageAppended)]
    assert messages == carried == list(run.transcript.messages)
    assert not any(isinstance(e, (TextDelta, ToolCallDelta)) for e in events)  # run never streams
    assert isinstance(events[-1], FinalOutput)


@pytest.mark.moves_cache_prefix(reason="a second session opens with other instructions")
def test_a_bust_is_an_event_before_the_request_it_is_found_in() -> None:
    agent = Agent(ScriptedModel([call("submit", answer="a"), call("submit", answer="b")]))
    agent.run_sync("First.")
    agent.instructions = "Other instructions: the opening moves."
    seen, _ = asyncio.run(read(agent, "Second."))
    at = kinds(seen).index("CacheBust")
    bust = seen[at]
    assert isinstance(bust, CacheBust)
    assert bust.request == 1
    assert seen[at + 1] == RequestSent(1)
    assert agent.busts == [bust.bust]


def test_a_failed_run_raises_its_error_after_its_events() -> None:
    def refuse(event: Event) -> None:
        if isinstance(event, RequestAnswered):
            raise ValueError("the application's hook failed")

    async def consume() -> list[Event]:
        seen: list[Event] = []
        agent = Agent(ScriptedModel([call("submit", answer="a")]), on_event=refuse)
        async with agent.iter("Go.") as events:

            async def read_all() -> None:
                async for event in events:
                    seen.append(event)

            with pytest.raises(RunAborted, match="hook failed"):
                await read_all()
            with pytest.raises(RunAborted):  # and again on every later read
                await events.__anext__()
        return seen

    seen = kinds(asyncio.run(consume()))
    assert seen == [
        "MessageAppended", "MessageAppended", "RequestSent", "ToolCallDelta", "PartialOutput",
    ]  # fmt: skip


def test_asking_for_the_run_before_it_ends_says_so() -> None:
    async def early() -> None:
        async with Agent(script(), [add]).iter("Sum.") as events:
            first = await events.__anext__()
            assert isinstance(first, MessageAppended)
            with pytest.raises(ConfigurationError, match="has not finished"):
                _ = events.run

    asyncio.run(early())


def test_leaving_the_block_cancels_the_run_with_its_transcript_closed() -> None:
    release = asyncio.Event()

    async def slow(x: int) -> int:
        """Waits for the test."""
        await release.wait()
        return x

    async def leave() -> list[Message]:
        messages: list[Message] = []
        model = ScriptedModel([call("slow", x=1), call("submit", answer="a")])
        agent = Agent(model, [slow], on_message=messages.append)
        async with agent.iter("Go.") as events:
            async for event in events:
                if isinstance(event, ToolStarted):
                    break
        return messages

    messages = asyncio.run(leave())
    assert isinstance(messages[-1], AssistantTurn)  # the call never answered by the tool
    assert not any(isinstance(m, ToolResult) for m in messages)


def test_iter_refuses_an_unknown_keyword_with_the_closest_name() -> None:
    with pytest.raises(ConfigurationError, match="history"):
        Agent(script(), [add]).iter("Go.", message_history=None)  # type: ignore[call-arg]


def test_a_prune_is_an_event_before_the_request_it_shrinks() -> None:
    events: list[Event] = []
    model = ScriptedModel([pruning.re_reader] * 8, context_window=3_000)
    tools = [pruning.read]
    agent = Agent(model, tools, maintenance=pruning.POLICY, max_steps=8, on_event=events.append)
    agent.max_result_chars = None  # as the maintenance test runs it: only pruning shrinks
    run = agent.run_sync("Read every file.")
    maintained = [e for e in events if isinstance(e, Maintained)]
    assert maintained
    assert [e.event for e in maintained] == run.maintenance
    after = events[events.index(maintained[0]) + 1 :]
    sent = next(e for e in after if isinstance(e, RequestSent))
    answered = next(e for e in after if isinstance(e, RequestAnswered))
    assert answered.request == sent.request
    assert answered.record.prefix.maintenance  # the request after the rewrite
