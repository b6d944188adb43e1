"""Misuse of the API: duplicate tool names, `max_steps=0` and friends, tasks and histories of
the wrong type, unsafe ids, options that contradict each other, one agent run twice at
once, a history from another agent, a callback that raises. Each is a ConfigurationError
saying what to change (before any request), or works with every transcript intact."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.bad_input.harness import check_outcome, exercise, expect
from warmloop import (
    Agent,
    ConfigurationError,
    ScriptedModel,
    Tool,
    Transcript,
    WarmloopError,
    call,
    tool,
)


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def submit_only() -> ScriptedModel:
    return ScriptedModel([call("submit", answer="x")])


def agent(**options: Any) -> Callable[[], object]:
    return lambda: Agent(submit_only(), tools=options.pop("tools", [lookup]), **options)


def run(task: Any = "Go.", **options: Any) -> Callable[[], Awaitable[object]]:
    return lambda: Agent(submit_only(), tools=[lookup]).run(task, **options)


def submit_tool() -> str:
    """Pretends to submit."""
    return "x"


def undocumented(key: str) -> str:
    return key


def copy_of_lookup(key: str) -> str:
    """Another lookup.

    Args:
        key: The key.
    """
    return key


CASES: dict[str, tuple[Callable[[], object], str]] = {
    # Building an agent.
    "duplicate-tool-names": (
        agent(tools=[lookup, Tool.from_function(copy_of_lookup, name="lookup")]),
        "two tools are named 'lookup'",
    ),
    "tool-named-submit": (
        agent(tools=[Tool.from_function(submit_tool, name="submit")]),
        "reserved",
    ),
    "tool-not-callable": (agent(tools=[42]), "tools must be functions or Tool objects"),
    "tool-without-docstring": (agent(tools=[undocumented]), "needs a docstring"),
    "tool-timeout-zero": (lambda: tool(timeout=0), "positive number of seconds"),
    "max-steps-zero": (agent(max_steps=0), "max_steps must be an integer >= 1"),
    "max-steps-string": (agent(max_steps="3"), "max_steps must be an integer >= 1"),
    "max-steps-negative": (agent(max_steps=-1), "max_steps"),
    "max-steps-float": (agent(max_steps=2.5), "max_steps"),
    "max-syntax-errors-zero": (agent(max_syntax_errors=0), "max_syntax_errors"),
    "max-tool-retries-negative": (agent(max_tool_retries=-1), "max_tool_retries"),
    "max-result-chars-zero": (agent(max_result_chars=0), "at least 100"),
    "max-result-chars-negative": (agent(max_result_chars=-5), "max_result_chars"),
    "max-result-chars-string": (agent(max_result_chars="big"), "max_result_chars"),
    "model-none": (lambda: Agent(None), "model must be a warmloop Model"),  # type: ignore[arg-type]
    "model-a-string": (lambda: Agent("openai:gpt-5"), "model must be a warmloop Model"),  # type: ignore[arg-type]
    "instructions-none": (agent(instructions=None), "instructions must be a string"),
    "callback-not-callable": (agent(on_message=5), "on_message must be a function"),
    "output-named-private": (agent(outputs={"_x": str}), "cannot be used as a name"),
    "output-named-model-config": (agent(outputs={"model_config": str}), "cannot be used"),
    # Running it.
    "task-empty-mapping": (run({}), "the task is empty"),
    "task-blank": (run(" \n"), "the task is empty"),
    "task-none": (run(None), "must be a string or a mapping"),
    "task-number": (run(42), "must be a string or a mapping"),
    "history-a-list": (run(history=[]), "history must be a Transcript"),
    "history-a-string": (run(history="{}"), "history must be a Transcript"),
    "conversation-id-a-path": (run(conversation_id="../x"), "is not allowed"),
    "session-id-a-path": (run(session="../../etc/passwd"), "is not allowed"),
    "session-and-history": (run(session="s", history=Transcript()), "not both"),
    "store-without-session": (run(store="sessions.db"), "pass session= too"),
    "store-another-database-url": (
        run(session="s", store="mysql://user@db.test/agents"),
        "'mysql' URLs are not supported",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_misuse_is_a_configuration_error(name: str) -> None:
    build, expected = CASES[name]

    async def attempt() -> None:
        made = build()
        if asyncio.iscoroutine(made):
            await made

    with pytest.raises(ConfigurationError) as caught:
        await attempt()
    assert expected in str(caught.value)
    assert "Traceback" not in str(caught.value)


async def test_run_sync_inside_a_running_loop() -> None:
    with pytest.raises(ConfigurationError, match=r"await run\(\)"):
        Agent(submit_only()).run_sync("Go.")


async def test_one_agent_run_concurrently_keeps_both_runs_whole() -> None:
    model = ScriptedModel(
        [call("lookup", key="a"), call("lookup", key="b")] + [call("submit", answer="x")] * 2
    )
    shared = Agent(model, tools=[lookup])
    first, second = await asyncio.gather(exercise(shared, "One."), exercise(shared, "Two."))
    for outcome in (first, second):
        check_outcome(outcome)
        expect(outcome, "ok")
    turns = [len(o.results) for o in (first, second)]
    assert sum(turns) == 4
    assert first.transcript is not None
    assert second.transcript is not None
    assert first.transcript.id != second.transcript.id


@pytest.mark.moves_cache_prefix(reason="another agent continues the history with other tools")
async def test_a_history_from_another_agent_continues_on_a_new_branch() -> None:
    earlier = await exercise(Agent(submit_only(), tools=[lookup]), "First.")
    assert earlier.transcript is not None
    model = submit_only()
    later = await exercise(
        Agent(model, instructions="Other rules."), "Second.", history=earlier.transcript
    )
    check_outcome(later, model=model, history_turns=1)
    expect(later, "ok")
    assert later.transcript is not None
    assert later.transcript.meta.parent == earlier.transcript.id
    assert later.transcript.messages[: len(earlier.transcript)] == earlier.transcript.messages


async def test_a_callback_that_raises_ends_the_run_with_the_transcript() -> None:
    def explode(message: object) -> None:
        if getattr(message, "kind", "") == "tool_result":
            raise RuntimeError("callback bug")

    model = ScriptedModel([call("lookup", key="a"), call("submit", answer="x")])
    outcome = await exercise(Agent(model, tools=[lookup], on_message=explode))
    expect(outcome, "RunAborted:callback bug")
    check_outcome(outcome, model=model)
    assert isinstance(outcome.error, WarmloopError)


# Round three (issue 38): mutants. An answer's max_tokens that leaves no room for a prompt.


@pytest.mark.parametrize("window", [4_096, 8_192])
def test_max_tokens_filling_the_stated_window_are_refused(window: int) -> None:
    import anthropic

    from warmloop.providers.anthropic import AnthropicModel

    offline = anthropic.AsyncAnthropic(api_key="offline")
    with pytest.raises(ConfigurationError, match=r"max_tokens \(8192\) leaves no room"):
        AnthropicModel("claude-sonnet-4-6", client=offline, context_window=window, max_tokens=8192)
