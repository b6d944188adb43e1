"""Forks at a chosen step: a branch with the parent's messages up to the end of a step, its
routing key and a new id; a run on it reads the parent's prefix. Forked children of a
fan-out start where the calling run stood before the turn that started them."""

from __future__ import annotations

import pytest

from warmloop import Agent, ConfigurationError, RunContext, ScriptedModel, call, fan_out, tool
from warmloop.messages import AssistantTurn, SystemText, ToolResult, UserText
from warmloop.providers.base import Rendered
from warmloop.providers.scripted import Reply

SONNET = "anthropic:claude-sonnet-4-6"
INSTRUCTIONS = "You refactor the parser carefully. " * 200


@tool
def read(path: str) -> str:
    """Read a file.

    Args:
        path: The file.
    """
    return f"contents of {path}"


def three_steps() -> ScriptedModel:
    return ScriptedModel(
        [
            call("read", path="a.py"),
            call("read", path="b.py"),
            call("submit", answer="done"),
        ],
        name=SONNET,
    )


@pytest.mark.moves_cache_prefix(
    reason="a fork at step 1 extends the parent's second request, not its last"
)
def test_a_fork_at_a_step_keeps_that_steps_messages_and_reads_the_parents_prefix() -> None:
    model = three_steps()
    agent = Agent(model, [read], instructions=INSTRUCTIONS)
    run = agent.run_sync("Refactor.")
    branch = run.fork(1)
    assert branch.id != run.transcript.id
    assert branch.meta.parent == run.transcript.id
    assert branch.conversation == run.transcript.conversation
    kinds = [type(m).__name__ for m in branch]
    assert kinds == ["SystemText", "UserText", "AssistantTurn", "ToolResult"]
    model.enqueue(call("submit", answer="b.py first"))
    other = agent.run_sync("What if we start with b.py?", history=branch)
    # Its first request is the parent's second (after step 1) and its own task: a read of
    # all the parent's second request held.
    assert other.requests[0].usage.cache_read_tokens >= run.requests[1].usage.prompt_tokens
    assert len(run.fork(0)) == 2  # before the first turn: the instructions and the task
    assert len(run.fork()) == len(run.transcript)
    with pytest.raises(ConfigurationError, match="the run has 3 steps"):
        run.fork(4)


def test_forked_children_start_where_the_caller_stood_and_read_its_prefix() -> None:
    """The children are the caller's twin (the same tools and instructions), so their first
    request is the caller's request that asked for them, plus each child's task."""

    def reply(rendered: Rendered) -> Reply:
        messages = rendered.payload["messages"]
        last = messages[-1]
        if last["role"] == "user" and "What if" in str(last["content"]):
            return call("submit", answer=f"tried: {last['content']}")
        if len(messages) == 2:
            return call("read", path="a.py")
        if len(messages) == 4:
            return call("explore", ideas=["What if we split it?", "What if we inline it?"])
        return call("submit", answer="merged")

    model = ScriptedModel([reply] * 6, name=SONNET)

    def planner() -> Agent:
        @tool
        async def explore(ctx: RunContext[None], ideas: list[str]) -> str:
            """Try each idea on a fork of this conversation.

            Args:
                ideas: One idea a fork.
            """
            runs = await fan_out(twin, ideas, fork=True)
            return "; ".join(str(r.output) for r in runs)

        return Agent(model, [read, explore], instructions=INSTRUCTIONS)

    parent, twin = planner(), planner()
    run = parent.run_sync("Refactor.")
    assert run.output == "merged"
    asked = run.requests[1].usage.prompt_tokens  # the request that asked for the children
    children = [c.run for c in run.children]
    assert all(c is not None for c in children)
    for child in children:
        assert child is not None
        assert child.transcript.conversation == run.transcript.conversation
        assert child.requests[0].usage.cache_read_tokens >= asked - 1  # whole 4-char tokens
        kinds = [type(m) for m in child.transcript.messages[:5]]
        # The caller's four messages before the turn that asked (the instructions, its
        # task, its read and the result), then the child's own idea.
        assert kinds == [SystemText, UserText, AssistantTurn, ToolResult, UserText]
