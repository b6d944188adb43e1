"""A tree of runs: a run started inside a tool call of another run is that run's child.

While a run answers a tool call (`calling`), the call's `Parent` is current; a run that
starts inside it (`agent.as_tool`, `fan_out`, or any `await other.run(...)` in a tool)
finds it and, by construction:
- routes where its siblings' cache lives: a fresh conversation's key is derived from the
  parent's and the child's opening (`child_conversation`: siblings of one agent share one
  key, so OpenAI's `prompt_cache_key` sends them where the first wrote), and the parent's
  key travels beside its own where the host reads one (`providers.routing.parent_key`,
  a self-hosted `parent_session_header`, as NVIDIA Dynamo's `X-Dynamo-Parent-Session-ID`);
- is recorded in the parent's `children` as it ends (`tracked`), finished or failed, so
  `run.cost()` has a row per child and `run.tree_usage` adds them up;
- and, inside an instrumented model's spans, its `invoke_agent` span is a child of the
  parent's `execute_tool` span (OpenTelemetry's own current context).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from warmloop.agent.events import Event
from warmloop.agent.result import ChildRun, Run, RunError
from warmloop.agent.state import RunState
from warmloop.messages import ToolCall
from warmloop.providers.routing import parent_key
from warmloop.sessions.store import SessionStore
from warmloop.transcript import Transcript

KEY_CHARS = 64
"""A conversation id's longest (`messages.validate_id`)."""


@dataclass
class Parent:
    """The run whose tool call is running: its conversation (routing key), its stored
    session and store when it has one (children are stored beside it, `delegation`), the
    call, where its children are recorded, and where it is told what it should know."""

    conversation: str
    call: ToolCall
    children: list[ChildRun]
    transcript: Transcript | None = None
    """The calling run's conversation as it stands (a forked child starts from it)."""
    session: str | None = None
    store: SessionStore | None = None
    warn: Callable[[str], None] = field(default=lambda line: None)


_PARENT: ContextVar[Parent | None] = ContextVar("warmloop_parent", default=None)
_WATCH: ContextVar[Callable[[Event], None] | None] = ContextVar("warmloop_watch", default=None)


def current_parent() -> Parent | None:
    """The run whose tool call is running here, if any."""
    return _PARENT.get()


@contextlib.contextmanager
def calling(parent: Parent) -> Iterator[None]:
    """Runs started inside the block are `parent`'s children."""
    token = _PARENT.set(parent)
    try:
        yield
    finally:
        _PARENT.reset(token)


@contextlib.contextmanager
def watching(watch: Callable[[Event], None]) -> Iterator[None]:
    """The run started inside the block tells `watch` its events too (a fan-out watches
    its leader's answers)."""
    token = _WATCH.set(watch)
    try:
        yield
    finally:
        _WATCH.reset(token)


def child_conversation(parent: str, fingerprint: str, instructions: str) -> str:
    """A fresh child conversation's routing key: the parent's, tagged with a digest of the
    child's opening (its tools and instructions), so every sibling of one agent under one
    parent shares it and no two openings do."""
    digest = hashlib.sha256(f"{fingerprint}\n{instructions}".encode()).hexdigest()[:12]
    return f"{parent[: KEY_CHARS - len(digest) - 1]}-{digest}"


def chained(
    first: Callable[[Event], None] | None, second: Callable[[Event], None] | None
) -> Callable[[Event], None] | None:
    """One listener telling both (either may be None)."""
    if first is None or second is None:
        return first or second

    def both(event: Event) -> None:
        first(event)
        second(event)

    return both


async def tracked(
    state: RunState, steps: Callable[[], Awaitable[Run]], kind: str = "delegated"
) -> Run:
    """Run `steps` (the run of `state`) as the current parent's child, if there is one:
    its events also go to a fan-out watching it, the parent's key travels with its
    requests, and it is recorded in the parent's children as it ends, finished or failed.
    Inside it no parent is current and nothing is watched: its own tool calls set theirs."""
    parent, watch = _PARENT.get(), _WATCH.get()
    if watch is not None:
        state.listener = chained(state.listener, watch)
    parent_token, watch_token = _PARENT.set(None), _WATCH.set(None)
    try:
        if parent is None:
            return await steps()
        with parent_key(parent.conversation):
            try:
                run = await steps()
            except RunError as exc:
                parent.children.append(child_row(state, parent.call.id, kind, error=exc))
                raise
        parent.children.append(child_row(state, parent.call.id, kind, run=run))
        return run
    finally:
        _PARENT.reset(parent_token)
        _WATCH.reset(watch_token)


def child_row(
    state: RunState,
    call_id: str,
    kind: str,
    *,
    run: Run | None = None,
    error: RunError | None = None,
) -> ChildRun:
    """The record of the run of `state` as a child, as it ended (`run` or `error`)."""
    settings = state.settings
    return ChildRun(
        settings.name or "agent",
        call_id,
        state.task,
        settings.model.name,
        tuple(state.usages()),
        run=run,
        error=error,
        priced_as=state.facts.priced_as,
        kind=kind,
    )
