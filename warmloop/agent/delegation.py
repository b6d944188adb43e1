"""Agents that call agents: an agent as a tool of another (`Agent.as_tool`, the OpenAI Agents
SDK's name; pydantic-ai's delegation is the same thing written by hand: a tool that awaits
another agent's `run`), and a fan-out of one agent over many tasks (`fan_out`), each child
a run of its own that shares what it can of the cache by construction:

- Siblings share one opening: a child's instructions and tools are its agent's, the same
  bytes for every task (the task is the first user turn, never in the system prompt), so
  the provider serves every sibling's opening from one write.
- The first child of a fan-out goes alone, and the others are released once its usage
  shows the opening written (`keepalive.leader_first.released`, the rule a fleet's batch follows).
- Keys derive from the parent's (`agent.lineage.child_conversation`), so siblings land
  where the first wrote, and the parent's key travels beside theirs where a router reads it.
- While children run, the parent's cache is kept warm by the keep-alive rule: the tool
  call is a pause of the parent (`tool:<name>`), its history the children's running times
  the parent saw before (or the `expected_seconds` given).
- Replay keyed by content: under a parent with a stored session, each child runs in a
  stored session of its own named by a digest of its task's content (`child_session`),
  in the parent's store. A tree resumed after a crash runs again only the children whose
  result is not stored there (one cut short goes on from its last stored step); a finished
  one's outputs are read back, whatever its position among the tasks.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from warmloop.agent.events import Event, RequestAnswered
from warmloop.agent.fork import before_current_turn
from warmloop.agent.lineage import Parent, child_conversation, current_parent, watching
from warmloop.agent.result import ChildRun, Run
from warmloop.agent.task import task_text
from warmloop.errors import ConfigurationError
from warmloop.facts.usage import Usage
from warmloop.keepalive.leader_first import CONFIRM_SECONDS, Warmed, released
from warmloop.keepalive.pinger import KeepAlivePolicy
from warmloop.messages import AssistantTurn, ToolResult
from warmloop.outputs import SUBMITTED, Outputs, submitted
from warmloop.providers.base import Model
from warmloop.sessions.off_loop import off_loop
from warmloop.sessions.store import SessionStore
from warmloop.tools.context import RunContext
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.tool import Tool
from warmloop.transcript import Transcript

T = TypeVar("T")
Task = str | Mapping[str, object]
OutputExtractor = Callable[[Run[Any]], str]
"""What a delegating tool returns to the model from a child's run (the OpenAI Agents SDK's
`custom_output_extractor`); by default the output as text (`output_text`)."""


class Delegate(Protocol):
    """What delegation needs of an agent (an `Agent` is one)."""

    name: str | None
    instructions: str
    fingerprint: str
    outputs: Outputs
    model: Model
    keepalive: KeepAlivePolicy | None

    async def run(
        self,
        task: Task,
        *,
        history: Transcript | None = ...,
        conversation_id: str | None = ...,
        session: str | None = ...,
        store: SessionStore | None = ...,
        resume_at: int | None = ...,
        deps: Any = ...,
    ) -> Run[Any]: ...


def content_key(agent: Delegate, task: Task) -> str:
    """A child's identity by content: its agent's opening (tools, instructions) and its
    task's text. Never its position among its siblings."""
    text = f"{agent.fingerprint}\n{agent.instructions}\n{task_text(task)}"
    return hashlib.sha256(text.encode()).hexdigest()


def child_session(parent_session: str, key: str) -> str:
    """The stored session a child of `parent_session` with content `key` runs in."""
    digest = hashlib.sha256(f"{parent_session}\n{key}".encode()).hexdigest()[:20]
    return f"{parent_session[:40]}-c{digest}"


def output_text(run: Run[Any]) -> str:
    """A child's output as the text its parent's tool call returns: a text output as it
    is, anything else as its JSON (the validated outputs)."""
    output = run.output
    return output if isinstance(output, str) else run.outputs.model_dump_json()


def stored_outputs(agent: Delegate, transcript: Transcript) -> Run[Any] | None:
    """A finished child read back from its stored session: its run, rebuilt from the
    transcript's accepted submit (nothing is sent); None when it did not finish."""
    messages = transcript.messages
    accepted = next(
        (
            m
            for m in reversed(messages)
            if isinstance(m, ToolResult) and m.name == SUBMIT and m.content == SUBMITTED
        ),
        None,
    )
    if accepted is None:
        return None
    calls = (c for m in messages if isinstance(m, AssistantTurn) for c in m.tool_calls)
    submit = next((c for c in calls if c.id == accepted.call_id), None)
    outputs = agent.outputs.validate(submit) if submit is not None else None
    if outputs is None or isinstance(outputs, ToolResult):
        return None
    steps = sum(isinstance(m, AssistantTurn) for m in messages)
    return Run(
        submitted(outputs),
        transcript,
        [],
        steps,
        model=agent.model.name,
        convert=agent.outputs.output,
    )


async def run_child(
    agent: Delegate, task: Task, *, deps: object = None, fork: bool = False
) -> Run[Any]:
    """One child run of `agent` on `task` under the run whose tool call is running here
    (if any). Under a parent with a stored session it runs in its own stored session named
    by its content, in the parent's store: a finished one is read back (recorded as
    `replayed`), one cut short goes on from its last stored step. With `fork`, it goes on
    from the calling run's conversation as it stood before the turn that called it (the
    agent should have the caller's tools, to read its cached prefix); never stored."""
    parent = current_parent()
    if fork:
        if parent is None or parent.transcript is None:
            raise ConfigurationError("fork=True forks the calling run: call it inside a tool")
        history = before_current_turn(parent.transcript)
        return await agent.run(task, history=history, deps=deps)
    if parent is None or parent.store is None or parent.session is None:
        return await agent.run(task, deps=deps)
    store = parent.store
    session = child_session(parent.session, content_key(agent, task))
    found = await off_loop(store.load, session)
    if found is not None and found.transcript is not None:
        done = stored_outputs(agent, found.transcript)
        if done is not None:
            requests = await off_loop(store.requests, session)
            usages = tuple(r.usage for r in requests)
            parent.children.append(_replayed(agent, task, done, parent, usages))
            return done
    key = child_conversation(parent.conversation, agent.fingerprint, agent.instructions)
    return await agent.run(
        task, session=session, store=store, resume_at=0, conversation_id=key, deps=deps
    )


def _replayed(
    agent: Delegate, task: Task, run: Run[Any], parent: Parent, usages: tuple[Usage, ...]
) -> ChildRun:
    return ChildRun(
        agent.name or "agent",
        parent.call.id,
        task_text(task),
        agent.model.name,
        usages,
        run=run,
        replayed=True,
        priced_as=agent.model.facts.priced_as,
    )


@dataclass
class LeaderWatch:
    """What a fan-out's leader showed so far: its answered requests and their usage."""

    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    first_at: float | None = None
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, event: Event) -> None:
        if isinstance(event, RequestAnswered):
            self.requests += 1
            self.usage = self.usage + event.record.usage
            if self.first_at is None:
                self.first_at = asyncio.get_running_loop().time()
            self.answered.set()


async def fan_out(
    agent: Delegate,
    tasks: Sequence[Task],
    *,
    deps: object = None,
    max_concurrency: int | None = None,
    fork: bool = False,
) -> list[Run[Any]]:
    """Run `agent` on every task, the first alone until its usage shows the opening
    written (then the rest at once, at most `max_concurrency` at a time): one run per task,
    in the tasks' order. Tasks of the same content run once (their runs are the same).
    A child that fails fails the fan-out once every other child has ended (their results
    are stored where the parent has a session), with its error. `fork`: each child goes
    on from the calling run's conversation (`run_child`)."""
    if max_concurrency is not None and (isinstance(max_concurrency, bool) or max_concurrency < 1):
        raise ConfigurationError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
    keys = [content_key(agent, task) for task in tasks]
    unique = dict(zip(keys, tasks, strict=True))
    if not unique:
        return []
    limit = asyncio.Semaphore(max_concurrency or len(unique))

    async def one(task: Task) -> Run[Any]:
        async with limit:
            return await run_child(agent, task, deps=deps, fork=fork)

    leader_key, leader_task = next(iter(unique.items()))
    watch = LeaderWatch()
    with watching(watch):
        leader = asyncio.ensure_future(one(leader_task))
    runs: dict[str, asyncio.Future[Run[Any]]] = {leader_key: leader}
    try:
        warmed = await _leader_released(leader, watch)
        if warmed.requests and not warmed.confirmed:
            _warn(f"a fan-out of {agent.name or 'an agent'}: {warmed.why}")
        for key, task in unique.items():
            if key not in runs:
                runs[key] = asyncio.ensure_future(one(task))
        await asyncio.wait(runs.values())
    finally:
        for future in runs.values():
            future.cancel()  # only those still going: a cancelled fan-out stops its children
    ended = {key: future.result() for key, future in runs.items()}
    return [ended[key] for key in keys]


async def _leader_released(leader: asyncio.Future[Run[Any]], watch: LeaderWatch) -> Warmed:
    """Wait, by the fan-out rule, until the others may go (the leader's failure releases
    them too: each then writes the opening itself)."""
    while True:
        now = asyncio.get_running_loop().time()
        waited = None if watch.first_at is None else now - watch.first_at
        warmed = released(watch.usage, watch.requests, finished=leader.done(), waited=waited)
        if warmed is not None:
            return warmed
        watch.answered.clear()
        pending: set[asyncio.Future[Any]] = {leader, asyncio.ensure_future(watch.answered.wait())}
        if waited is not None:
            pending.add(asyncio.ensure_future(asyncio.sleep(CONFIRM_SECONDS - waited)))
        try:
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in pending - {leader}:
                future.cancel()


def _warn(line: str) -> None:
    parent = current_parent()
    if parent is not None:
        parent.warn(line)


def agent_tool(
    agent: Delegate,
    *,
    name: str | None,
    description: str | None,
    parallel: bool = False,
    expected_seconds: float | None = None,
    output_extractor: OutputExtractor | None = None,
    max_concurrency: int | None = None,
    needs_approval: bool = False,
    fork: bool = False,
    timeout: float | None = math.inf,
) -> Tool:
    """`agent` as a tool (see `Agent.as_tool`)."""
    tool_name = name or agent.name
    if not tool_name:
        raise ConfigurationError(
            "as_tool needs a name for the tool: pass name=..., or name the agent (Agent(name=...))"
        )
    extract = output_extractor or output_text
    if not callable(extract):
        raise ConfigurationError(f"output_extractor must be a function, got {extract!r}")
    about = description or f"Give a task to the {tool_name} agent; it answers when done."
    if parallel:

        async def delegate_all(ctx: RunContext[Any], tasks: list[str]) -> str:
            """Run the agent on each task at once.

            Args:
                tasks: One task for each run, complete on its own.
            """
            runs = await fan_out(
                agent, tasks, deps=ctx.deps, max_concurrency=max_concurrency, fork=fork
            )
            return json.dumps([extract(run) for run in runs], ensure_ascii=False)

        function: Callable[..., Awaitable[str]] = delegate_all
    else:

        async def delegate(ctx: RunContext[Any], task: str) -> str:
            """Run the agent on one task.

            Args:
                task: What the agent is to do, complete on its own.
            """
            return extract(await run_child(agent, task, deps=ctx.deps, fork=fork))

        function = delegate
    return Tool.from_function(
        function,
        name=tool_name,
        description=about,
        expected_seconds=expected_seconds,
        needs_approval=needs_approval,
        timeout=timeout,
    )
