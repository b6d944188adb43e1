"""Answers as text (issue 45, must-show 2): where the output is text (the default `answer:
str`, or `outputs=str`), a model that answers in words is answered, on every wire through
its official SDK against a loopback keep-alive server; and a streamed answer reaches the
caller as it arrives: the first piece of its text, or of the `submit` call's answer, is
read before the server has sent its last event (the server holds it until the test has
seen that piece), plain and under `instrument()`."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.fake_servers import Said, ToolUse
from tests.support.wire_servers import WireServer, connect, scripted
from warmloop import Agent, Event, PartialOutput, TextDelta
from warmloop.providers.base import Model

WIRES = ("anthropic", "openai", "openai-chat", "gemini")
"""Messages, Responses, Chat Completions and Gemini, each through its official SDK."""
ANSWER = "Paris is the capital of France."


@pytest.mark.parametrize("prefix", WIRES)
def test_a_plain_text_reply_is_the_answer_where_the_output_is_text(
    wire_server: WireServer, prefix: str
) -> None:
    wire_server.serve(scripted([Said(ANSWER), Said(ANSWER)]))
    run = Agent(connect(wire_server, prefix)).run_sync("What is the capital of France?")
    assert run.output == ANSWER
    assert not run.extracted
    assert len(wire_server.requests()) == 1  # no extract step, no second request
    as_str = Agent(connect(wire_server, prefix), outputs=str).run_sync("And again?")
    assert as_str.output == ANSWER


def traced(model: Model) -> Model:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider

    from warmloop import instrument

    return instrument(model, tracer=TracerProvider().get_tracer("test"))


async def first_piece_before_the_last_event(
    server: WireServer, model: Model
) -> tuple[list[Event], str]:
    """Read the run's events; at the first piece of the answer, check the server still
    holds its last event, then let it go. The pieces seen, and the run's output."""
    seen: list[Event] = []
    async with Agent(model).iter("What is the capital of France?") as events:
        async for event in events:
            answer_piece = isinstance(event, TextDelta) or (
                isinstance(event, PartialOutput) and event.text
            )
            if answer_piece and not seen:
                assert not server.release_last.is_set()
                assert not server.last_unreleased  # the server is still holding its last event
                server.release_last.set()
            if answer_piece:
                seen.append(event)
    return seen, events.run.output


@pytest.mark.parametrize("layer", ["plain", "instrumented"])
@pytest.mark.parametrize("prefix", WIRES)
def test_a_streamed_text_answer_reaches_the_caller_before_the_last_event(
    wire_server: WireServer, prefix: str, layer: str
) -> None:
    wire_server.serve(scripted([Said(ANSWER)]))
    wire_server.hold_last_event()
    model = connect(wire_server, prefix)
    seen, output = asyncio.run(
        first_piece_before_the_last_event(wire_server, traced(model) if layer != "plain" else model)
    )
    assert output == ANSWER
    assert not wire_server.last_unreleased
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == ANSWER


@pytest.mark.parametrize("prefix", WIRES)
def test_a_submitted_answer_streams_as_partial_outputs(
    wire_server: WireServer, prefix: str
) -> None:
    wire_server.serve(scripted([ToolUse("submit", {"answer": ANSWER})]))
    if prefix != "gemini":  # Gemini sends a call whole, in its one (so last) chunk
        wire_server.hold_last_event()
    seen, output = asyncio.run(
        first_piece_before_the_last_event(wire_server, connect(wire_server, prefix))
    )
    assert output == ANSWER
    partial = [e for e in seen if isinstance(e, PartialOutput)]
    assert partial[-1].text == ANSWER
    assert partial[-1].arguments == {"answer": ANSWER}
    if prefix != "gemini":
        assert len(partial) >= 2
        assert partial[0].text is not None
        assert ANSWER.startswith(partial[0].text)
        assert len(partial[0].text) < len(ANSWER)
