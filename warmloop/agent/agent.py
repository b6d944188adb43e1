"""The agent: a model, tools and declared outputs, configured once and run many times.

Each run is a `steps.Runner` (the ReAct steps: query, parse, act, append) that reads the
agent's settings as the run starts; what the agent learns across runs (the opening of its
first session, every bust, how long its runs go on) lives in one object it owns, `learned`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, replace
from os import PathLike
from typing import Any, Generic, Literal

from warmloop.agent.approvals import (
    Decision,
    before_turn,
    checked_approvals,
    run_start,
    stored_wait,
    task_at,
)
from warmloop.agent.delegation import OutputExtractor, agent_tool
from warmloop.agent.deps import check_deps, check_deps_type
from warmloop.agent.event_stream import EventStream
from warmloop.agent.events import Event
from warmloop.agent.handoff import Handoff, handoffs_by_tool, with_handoff_tools
from warmloop.agent.limits import UsageLimits, run_limits
from warmloop.agent.lineage import child_conversation, current_parent
from warmloop.agent.result import Run
from warmloop.agent.settings import Settings
from warmloop.agent.state import RunState
from warmloop.agent.steps import Runner
from warmloop.agent.task import task_text
from warmloop.agent.thread_loop import run_in_thread_loop
from warmloop.agent.wakeup import signals_wake_the_loop
from warmloop.errors import ConfigurationError
from warmloop.facts.model_facts import ModelFacts
from warmloop.keepalive.pauses import Waiting, waiting
from warmloop.keepalive.pinger import KeepAlivePolicy
from warmloop.keywords import checked_keywords
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.memory import Learned
from warmloop.messages import Message, validate_id
from warmloop.outputs import OutputCheck, Outputs, OutputT
from warmloop.providers.applied_settings import with_settings
from warmloop.providers.base import Model
from warmloop.providers.deferred import KeyLater, model_named
from warmloop.providers.model_settings import ModelSettings, check_settings, merged
from warmloop.providers.select import examples
from warmloop.sessions.persistence import SessionPersistence
from warmloop.sessions.resume import open_session
from warmloop.sessions.store import SessionStore
from warmloop.tools.context import DepsT
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.invoke import check_result_cap
from warmloop.tools.schema import tools_fingerprint
from warmloop.tools.tool import Tool, ToolFunction, check_flag
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript
from warmloop.wire.guard import Bust
from warmloop.wire.stream import WireStream

DEFAULT_INSTRUCTIONS = (
    "You are an agent that completes tasks with tools. Call tools to gather what you need, "
    f"then call {SUBMIT} with your final outputs."
)
DEFAULT_MAINTENANCE = MaintenancePolicy()
DEFAULT_KEEPALIVE = KeepAlivePolicy()
"""Keep-alives on by default: the rule never pings where it cannot pay (see
`keepalive/rule.py`)."""
DEFAULT_MAX_STEPS = 40
"""Room for an ordinary task of a few dozen tool calls (peers default to 25-50)."""
NOT_GIVEN: Any = object()
"""`override(deps=...)` left out (None is a value deps may take)."""


@dataclass(frozen=True)
class Overrides:
    """What `Agent.override` put in place: a model, and deps (`NOT_GIVEN`: none)."""

    model: Model | None = None
    deps: object = NOT_GIVEN


def check_name(name: object) -> str | None:
    """An agent's name: None, or a string of some printable text."""
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip() or not name.isprintable():
        raise ConfigurationError(f"name must be a non-empty line of text or None, got {name!r}")
    return name


def _positive_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def _model_of(model: Model | str) -> Model:
    """`model`, or the model a selection string names; anything else is refused."""
    if isinstance(model, str):
        model = model_named(model)  # its API key checked when a run needs it
    if not isinstance(model, Model):
        raise ConfigurationError(
            f"model must be a warmloop Model (name, facts, discover, render, send) or a "
            f"selection string (e.g. {examples()}), got {model!r}"
        )
    return model


def _check_hooks(**hooks: object) -> None:
    """Each hook is a function or None: a wrong one is refused by its keyword's name."""
    for name, hook in hooks.items():
        if hook is not None and not callable(hook):
            raise ConfigurationError(f"{name} must be a function or None, got {hook!r}")


def _toolbox_of(tools: Iterable[Tool | ToolFunction] | Toolbox) -> Toolbox:
    """The agent's tools as a Toolbox: a Toolbox instance (a catalog, code mode, MCP:
    warmloop.tools) as given; none of them may take the outputs' tool name."""
    toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
    if SUBMIT in toolbox:
        raise ConfigurationError(f"{SUBMIT!r} is reserved for outputs; rename that tool")
    return toolbox


def _keepalive_policy(keepalive: object) -> KeepAlivePolicy | None:
    if keepalive is not None and not isinstance(keepalive, KeepAlivePolicy):
        raise ConfigurationError(f"keepalive must be a KeepAlivePolicy or None, got {keepalive!r}")
    return keepalive


class Agent(Generic[DepsT, OutputT]):
    """A reusable agent: a model, tools and declared outputs. Each `run` is independent.
    `Agent(model, outputs=City)` is an `Agent[None, City]`: its runs' `output` is a City
    (`warmloop.output_types` lists the types `outputs=` takes). `deps_type=` names the
    class of each run's `deps=`, which tools taking a `RunContext` receive.

    `model` is a warmloop `Model` or a selection string such as
    `"anthropic:claude-sonnet-4-5"`, resolved exactly as `resolve_model` does (for a
    provider's options, call `resolve_model(name, ...)` and pass its model); its API key
    is checked when a run starts, so an application that makes its agent at import needs
    no key to be imported (its tests swap the model with `override`).
    `tools` is a list of tools or a `Toolbox` (which also takes a catalog, code mode and
    MCP). `max_result_chars` caps each tool result: `"window"` (default) a share of the
    model's window when the window is a fact, no cap while it is only assumed; an int; or
    None. A `Toolbox`'s own `max_result_chars` holds too: the smaller cap wins. Planning
    reads the model's facts (`model.facts`). `busts` collects every cache bust the guard
    saw in this agent's runs, including a fresh session whose opening (parameters, tools,
    system prompt) differs from the agent's earlier sessions.
    `check_outputs` checks a valid submit against the run's messages: what it returns goes
    back as submit's error and the run goes on (every submit is checked alike, so a run
    whose answers keep being refused ends at `max_steps`, in the extract step, which is
    never checked); e.g. `workspace.grounding.unread_answer`.
    `on_event` is called with each event of every run, in order (see `iter`);
    `on_message` with each message appended, `on_maintenance` with each rewrite and
    keep-alive: views of the same events.
    `model_settings` (`ModelSettings`: temperature, max_tokens, thinking_budget, ...) go
    with every request; a run's own `model_settings=` replace them setting by setting.
    A tool that raises `ModelRetry` tells the model, and the run goes on; any other
    exception from a tool ends the run (`RunAborted`, caused by `ToolRaised`) unless the
    tool says otherwise (`@tool(errors_to_model=True)`) or `tool_errors_to_model=True`
    sends every tool's errors to the model.
    `name` names the agent (its rows in a parent's `run.cost()`, its `invoke_agent {name}`
    spans with `gen_ai.agent.name`, the tool `as_tool` makes of it). `handoffs` (agents, or
    `handoff(agent, ...)`) are the agents it may hand its conversation to, each through a
    `transfer_to_<name>` tool (`agent.handoff`).
    """

    @checked_keywords("Agent(...)")
    def __init__(
        self,
        model: Model | str,
        tools: Iterable[Tool | ToolFunction] | Toolbox = (),
        *,
        outputs: type[OutputT] | Mapping[str, object] | None = None,
        deps_type: type[DepsT] | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_syntax_errors: int = 3,
        max_tool_retries: int = 3,
        max_result_chars: int | Literal["window"] | None = "window",
        on_message: Callable[[Message], None] | None = None,
        maintenance: MaintenancePolicy | None = DEFAULT_MAINTENANCE,
        on_maintenance: Callable[[MaintenanceEvent], None] | None = None,
        keepalive: KeepAlivePolicy | None = DEFAULT_KEEPALIVE,
        check_outputs: OutputCheck | None = None,
        on_event: Callable[[Event], None] | None = None,
        model_settings: ModelSettings | None = None,
        tool_errors_to_model: bool = False,
        name: str | None = None,
        handoffs: Iterable[Agent[Any, Any] | Handoff] = (),
    ) -> None:
        self.max_steps = _positive_int(max_steps, "max_steps", 1)
        self.max_syntax_errors = _positive_int(max_syntax_errors, "max_syntax_errors", 1)
        self.max_tool_retries = _positive_int(max_tool_retries, "max_tool_retries", 0)
        model = _model_of(model)
        if not isinstance(instructions, str):
            raise ConfigurationError(f"instructions must be a string, got {instructions!r}")
        self.name = check_name(name)
        """What the agent is called: its rows in a parent's cost, its spans, its tools."""
        _check_hooks(
            on_message=on_message,
            on_maintenance=on_maintenance,
            check_outputs=check_outputs,
            on_event=on_event,
        )
        self.model = model
        self.model_settings = check_settings(model_settings, "Agent(model_settings=...)")
        with_settings(model, self.model_settings)  # one the provider does not take: now
        if max_result_chars != "window":
            max_result_chars = check_result_cap(max_result_chars)
        self.max_result_chars: int | Literal["window"] | None = max_result_chars
        self.handoffs = handoffs_by_tool(handoffs)
        """The agents this one may hand its conversation to, by the tool that does it."""
        self.toolbox = _toolbox_of(with_handoff_tools(tools, self.handoffs))
        self.outputs = Outputs(outputs)
        self.deps_type = check_deps_type(deps_type, self.toolbox)
        self.tool_specs = (*self.toolbox.specs(), self.outputs.spec)
        self.fingerprint = tools_fingerprint(self.tool_specs)
        self.instructions = instructions
        self.on_message = on_message
        self.maintenance = maintenance
        self.on_maintenance = on_maintenance
        self.keepalive = _keepalive_policy(keepalive)
        self.check_outputs = check_outputs
        self.on_event = on_event
        self.tool_errors_to_model = check_flag(tool_errors_to_model, "tool_errors_to_model")
        self._overrides: ContextVar[Overrides | None] = ContextVar("overrides", default=None)
        self.learned = Learned()
        """What this agent's runs taught it; only its runs write it."""

    @property
    def model(self) -> Model:
        """The model runs use: the one `override(model=...)` put in place where one is in
        force (in this context: this thread, this task), else the agent's own."""
        overrides = self._overrides.get()
        if overrides is not None and overrides.model is not None:
            return overrides.model
        return self._model

    @model.setter
    def model(self, model: Model) -> None:
        self._model = model

    @checked_keywords("agent.override(...)")
    @contextlib.contextmanager
    def override(
        self, *, model: Model | str | None = None, deps: object = NOT_GIVEN
    ) -> Iterator[None]:
        """Within the block, runs of this agent use `model` (a `Model` or a selection
        string) and `deps` instead of the agent's model and the `deps=` they are passed: a
        test swaps in a `ScriptedModel` for the agent an application made, without changing
        the application (pydantic-ai's `agent.override`). It holds for the current context
        only (this thread or asyncio task, and tasks it starts), so concurrent tests do not
        see each other's; blocks nest, the inner winning."""
        chosen = model_named(model) if isinstance(model, str) else model
        if chosen is not None and not isinstance(chosen, Model):
            raise ConfigurationError(f"override(model=...) needs a warmloop Model, got {chosen!r}")
        outer = self._overrides.get() or Overrides()
        token = self._overrides.set(
            Overrides(
                chosen if chosen is not None else outer.model,
                deps if deps is not NOT_GIVEN else outer.deps,
            )
        )
        try:
            yield
        finally:
            self._overrides.reset(token)

    @contextlib.contextmanager
    def _carried(self, overrides: Overrides | None) -> Iterator[None]:
        """`overrides` in force in the current context for the block, then as they were."""
        token = self._overrides.set(overrides)
        try:
            yield
        finally:
            self._overrides.reset(token)

    @property
    def busts(self) -> list[Bust]:
        """Every cache bust the guard saw in this agent's runs."""
        return self.learned.busts

    @property
    def opening(self) -> WireStream | None:
        """The first request of this agent's first fresh session: later fresh sessions
        must open with the same bytes (parameters, tools, system prompt)."""
        return self.learned.opening

    def settings(self) -> Settings:
        """What a run reads of this agent, as it is now."""
        return Settings.of(self)

    def waiting(
        self,
        conversation: Transcript | str,
        *,
        store: SessionStore | str | PathLike[str] | None = None,
        since: float | None = None,
    ) -> AbstractAsyncContextManager[Waiting]:
        """Keep a conversation's cache warm while the application waits on someone (a
        human's approval, an answer), by the keep-alive rule: `async with
        agent.waiting(run.transcript): ...`, or a stored session by name (`store=`).
        Nothing is appended or stored; the keep-alives are in the `Waiting` it yields.
        Outside such a block a finished run's cache is never pinged. A run waiting for
        approval (`WaitingForApproval`) is kept as a pause of its tool: the request that
        asked for the call is repeated, priced on this agent's earlier waits for that tool
        (the stored session's included)."""
        if not isinstance(conversation, Transcript):
            validate_id(conversation)  # refused here, not on entering the block
        return self._waiting(conversation, store, since)

    @contextlib.asynccontextmanager
    async def _waiting(
        self,
        conversation: Transcript | str,
        store: SessionStore | str | PathLike[str] | None,
        since: float | None,
    ) -> AsyncIterator[Waiting]:
        if not isinstance(conversation, Transcript):
            session = conversation
            conversation, pauses = await stored_wait(session, store)
            self.learned.stored(session, pauses, conversation.conversation)
        model = with_settings(self.model, self.model_settings)  # as the runs send
        kept, kind = conversation, "waiting"
        asked = before_turn(conversation)
        if asked is not None:  # a run waiting for approval: the pause of the tool it asked
            kept, kind = asked, f"tool:{conversation.pending_calls()[0].name}"
        async with waiting(
            model, self.tool_specs, self.learned, self.keepalive, kept, since, kind
        ) as wait:
            yield wait

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        parallel: bool = False,
        expected_seconds: float | None = None,
        output_extractor: OutputExtractor | None = None,
        max_concurrency: int | None = None,
        needs_approval: bool = False,
        fork: bool = False,
        timeout: float | None = math.inf,
    ) -> Tool:
        """This agent as a tool of another (the OpenAI Agents SDK's `as_tool`): the tool
        takes a `task`, runs this agent on it as a child of the calling run (with its
        deps), and returns the output as text (`output_extractor(run)` to choose). With
        `parallel=True` it takes `tasks` and runs one child per task by `fan_out` (the first
        alone until its usage shows the opening written), returning a JSON list. The name
        defaults to the agent's; `expected_seconds` is how long a call usually takes (the
        parent's keep-alive prices its wait on it until it has seen some). Siblings share
        one opening and a routing key derived from the parent's; under a parent with a
        stored session each child is stored too, by its task's content
        (`agent.delegation`). `needs_approval=True`: a call waits for a person's decision
        (`agent.resume`). `fork=True`: each child goes on from the calling run's
        conversation before the turn that called it (give this agent the caller's tools,
        so it reads the caller's cached prefix). `timeout`: none by default (a child's
        run is bounded by its own `max_steps`; a toolbox's 120 s would cut a long one)."""
        return agent_tool(
            self,
            name=name,
            description=description,
            parallel=parallel,
            expected_seconds=expected_seconds,
            output_extractor=output_extractor,
            max_concurrency=max_concurrency,
            needs_approval=needs_approval,
            fork=fork,
            timeout=timeout,
        )

    def result_cap(self, facts: ModelFacts) -> int | None:
        """The cap on one tool result under `facts`: the smaller of the toolbox's and
        `max_result_chars`, where "window" is a share of a known window (no cap while the
        window is only assumed)."""
        return self.settings().result_cap(facts)

    def _runner(
        self,
        task: str | Mapping[str, object],
        history: Transcript | None,
        conversation_id: str | None,
        hook: SessionPersistence | None = None,
        resume_at: int | None = None,
        listener: Callable[[Event], None] | None = None,
        model_settings: ModelSettings | None = None,
        deps: object = None,
        usage_limits: UsageLimits | None = None,
        approvals: Mapping[str, Decision] | None = None,
    ) -> Runner:
        if history is not None and not isinstance(history, Transcript):
            raise ConfigurationError(
                f"history must be a Transcript (e.g. run.transcript), got {type(history).__name__}"
            )
        if conversation_id is not None:
            validate_id(conversation_id)
        parent = current_parent()
        if conversation_id is None and history is None and hook is None and parent is not None:
            # A fresh child conversation routes where its siblings' cache lives.
            key = child_conversation(parent.conversation, self.fingerprint, self.instructions)
            conversation_id = key
        if resume_at is not None and (hook is None or not 0 <= resume_at <= len(hook.transcript)):
            raise ConfigurationError(
                f"resume_at={resume_at!r} must be a position in the stored session's messages"
            )
        overrides = self._overrides.get()
        if overrides is not None and overrides.deps is not NOT_GIVEN:
            deps = overrides.deps
        check_deps(deps, self.deps_type, self.toolbox)
        if isinstance(self.model, KeyLater):
            self.model.resolved()  # no API key: MissingApiKey now, before the run
        # The run's settings over the agent's, refused here (before any request) where the
        # provider does not take one.
        chosen = merged(self.model_settings, model_settings)
        settings = replace(self.settings(), model=with_settings(self.model, chosen))
        limits = run_limits(usage_limits, settings.model)
        return Runner(
            RunState(
                settings,
                self.learned,
                task_text(task),
                history,
                conversation_id,
                hook,
                resume_at,
                deps,
                listener=listener,
                streaming=listener is not None,
                limits=limits,
                approvals=dict(approvals or {}),
            )
        )

    def _session(
        self,
        session: str | None,
        store: SessionStore | str | PathLike[str] | None,
        history: Transcript | None,
        conversation_id: str | None,
        resuming: bool = False,
    ) -> AbstractAsyncContextManager[SessionPersistence | None]:
        """The stored session's recorder, holding its lease, or nothing without `session`."""
        if session is None:
            if store is not None:
                raise ConfigurationError("store= names where sessions live; pass session= too")
            return nullcontext()
        if history is not None:
            raise ConfigurationError(
                "a session continues its own stored conversation: pass session= or history=, "
                "not both"
            )
        if self.handoffs:
            raise ConfigurationError(
                "an agent with handoffs= runs without session= for now: its target would go "
                "on with a copy of the conversation the session does not store"
            )
        return open_session(
            session,
            store,
            conversation_id=conversation_id,
            cache_ttl=self.model.facts.profile.ttl,
            close_pending=not resuming,
        )

    @checked_keywords("agent.run(...)")
    async def run(
        self,
        task: str | Mapping[str, object],
        *,
        history: Transcript | None = None,
        conversation_id: str | None = None,
        session: str | None = None,
        store: SessionStore | str | PathLike[str] | None = None,
        resume_at: int | None = None,
        model_settings: ModelSettings | None = None,
        deps: DepsT = None,  # type: ignore[assignment]  # None for an agent without deps
        usage_limits: UsageLimits | None = None,
    ) -> Run[OutputT]:
        """Run one task; with `history`, continue that conversation on a new branch.
        `conversation_id` names the conversation: it is the provider's routing key.
        With `session`, create or continue that stored session in place (in `store`, by
        default the SQLite file in the user's data directory), persisting each step;
        SessionBusy if another process holds it. With `resume_at` too (where this task's
        run began in the session), a run a crash cut short goes on from its last stored
        step: a stored response is never requested again, a returned tool never run again.
        `model_settings` replace the agent's, setting by setting, for this run only.
        `deps` is handed to every tool that takes a `RunContext` (as `ctx.deps`).
        `usage_limits` (`UsageLimits`: requests, tokens, dollars) are checked before each
        request: one that would pass a limit is never sent (`UsageLimitExceeded`)."""
        resuming = resume_at is not None
        async with self._session(session, store, history, conversation_id, resuming) as hook:
            runner = self._runner(
                task,
                history,
                conversation_id,
                hook,
                resume_at,
                model_settings=model_settings,
                deps=deps,
                usage_limits=usage_limits,
            )
            return await runner.run()

    @checked_keywords("agent.resume(...)")
    async def resume(
        self,
        session: str,
        *,
        approvals: Mapping[str, Decision] | None = None,
        store: SessionStore | str | PathLike[str] | None = None,
        model_settings: ModelSettings | None = None,
        deps: DepsT = None,  # type: ignore[assignment]  # None for an agent without deps
    ) -> Run[OutputT]:
        """Go on with the stored run of `session` where it stopped, in any process: one
        waiting for approval (`WaitingForApproval`), with `approvals` deciding its calls by
        id (True runs one, False or `ToolDenied(message)` answers it refused; a call left
        undecided keeps it waiting), or one a crash cut short (a stored response is never
        requested again, a returned tool never run again). The run continues the same
        conversation, so its next request reads what the cache holds of it."""
        validate_id(session, "session id")
        async with self._session(session, store, None, None, resuming=True) as hook:
            assert hook is not None
            messages = hook.transcript.messages
            start = run_start(messages)
            decisions = checked_approvals(approvals, hook.transcript.pending_calls())
            runner = self._runner(
                task_at(messages, start),
                None,
                None,
                hook,
                start,
                model_settings=model_settings,
                deps=deps,
                approvals=decisions,
            )
            return await runner.run()

    @checked_keywords("agent.iter(...)")
    def iter(
        self,
        task: str | Mapping[str, object],
        *,
        history: Transcript | None = None,
        conversation_id: str | None = None,
        session: str | None = None,
        store: SessionStore | str | PathLike[str] | None = None,
        resume_at: int | None = None,
        model_settings: ModelSettings | None = None,
        deps: DepsT = None,  # type: ignore[assignment]  # None for an agent without deps
        usage_limits: UsageLimits | None = None,
    ) -> EventStream:
        """`run`, consumed as its events in order: `async with agent.iter(task) as events:
        async for event in events: ...`, then `events.run`. Requests are streamed where
        the model can (`TextDelta` and `ToolCallDelta` as they arrive); the arguments are
        `run`'s. Leaving the block cancels a run still going."""
        resuming = resume_at is not None

        async def start(listener: Callable[[Event], None]) -> Run:
            async with self._session(session, store, history, conversation_id, resuming) as hook:
                runner = self._runner(
                    task,
                    history,
                    conversation_id,
                    hook,
                    resume_at,
                    listener=listener,
                    model_settings=model_settings,
                    deps=deps,
                    usage_limits=usage_limits,
                )
                return await runner.run()

        return EventStream(start)

    @checked_keywords("agent.run_sync(...)")
    def run_sync(
        self,
        task: str | Mapping[str, object],
        *,
        history: Transcript | None = None,
        conversation_id: str | None = None,
        session: str | None = None,
        store: SessionStore | str | PathLike[str] | None = None,
        model_settings: ModelSettings | None = None,
        deps: DepsT = None,  # type: ignore[assignment]  # None for an agent without deps
        usage_limits: UsageLimits | None = None,
    ) -> Run[OutputT]:
        """`run` for code that is not async. A thread's `run_sync` calls share one event
        loop (`thread_loop`), so a model's pooled connections outlive each call."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ConfigurationError("run_sync was called inside an event loop; use await run()")
        runner: Runner | None = None
        # The thread's loop runs every call in one context of its own: the caller's
        # overrides are carried in, and taken out again when the run ends.
        overrides = self._overrides.get()

        async def run() -> Run[OutputT]:
            nonlocal runner
            with signals_wake_the_loop(asyncio.get_running_loop()), self._carried(overrides):
                async with self._session(session, store, history, conversation_id) as hook:
                    runner = self._runner(
                        task,
                        history,
                        conversation_id,
                        hook,
                        model_settings=model_settings,
                        deps=deps,
                        usage_limits=usage_limits,
                    )
                    return await runner.run()

        try:
            return run_in_thread_loop(run())
        except KeyboardInterrupt as exc:
            if runner is not None:
                runner.interrupted(exc)
            raise
