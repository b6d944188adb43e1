"""The ReAct runtime: seed once, then per step query, parse, act, append. Nothing is rebuilt.

Every exit keeps the transcript: an error ends as a `RunError` carrying it (the original as
`__cause__`); Ctrl-C or a cancelled task closes the step in progress (pending calls get an
"interrupted" result, so pairing holds) and re-raises with the transcript attached as
`.transcript`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from pydantic import BaseModel

from warmloop.cache.guard import Bust, PrefixCheck, PrefixGuard, opening_bust
from warmloop.cache.pricing import CostReport, cost_report
from warmloop.cache.usage import Usage
from warmloop.cache.wire import WireStream
from warmloop.errors import (
    ConfigurationError,
    ExtractFailed,
    ProviderError,
    RequestFailed,
    RunAborted,
    RunError,
    SyntaxBudgetExceeded,
)
from warmloop.outputs import SUBMIT, SUBMITTED, Outputs, OutputSpec
from warmloop.providers.base import Model, Rendered
from warmloop.tools import Tool, Toolbox, ToolFunction, ToolSpec
from warmloop.trajectory import TrajectoryStep, trajectory
from warmloop.transcript import (
    AssistantTurn,
    Message,
    Meta,
    Notice,
    SystemText,
    ToolResult,
    Transcript,
    UserText,
    validate_id,
)

DEFAULT_INSTRUCTIONS = (
    "You are an agent that completes tasks with tools. Call tools to gather what you need, "
    f"then call {SUBMIT} with your final outputs."
)
INTERRUPTED = "Not executed: the run was interrupted before this call finished."


@dataclass(frozen=True)
class RequestRecord:
    """One model request: its usage, wall-clock seconds and prefix check."""

    usage: Usage
    seconds: float
    prefix: PrefixCheck


@dataclass
class Run:
    """A finished run: validated outputs, the full transcript, and per-request records.
    `start` is where this run's messages begin in the transcript (after any history)."""

    outputs: BaseModel
    transcript: Transcript
    requests: list[RequestRecord]
    steps: int
    extracted: bool = False
    model: str = ""
    start: int = 0

    @property
    def usage(self) -> Usage:
        """Usage summed over every request of the run."""
        return sum((r.usage for r in self.requests), Usage())

    @property
    def cache_hit_rate(self) -> float:
        """Share of all input tokens of the run that were served from the cache."""
        return self.usage.cache_hit_rate

    def cost(self) -> CostReport:
        """The run's cost in USD under the pricing table (`total` is None when unpriced)."""
        return cost_report(self.model, (r.usage for r in self.requests))

    @property
    def trajectory(self) -> list[TrajectoryStep]:
        """This run's tool calls, derived from the transcript (never stored)."""
        return trajectory(self.transcript.messages[self.start :])


def tools_fingerprint(specs: Iterable[ToolSpec]) -> str:
    """A short digest of a tool set as the model sees it (names, descriptions, schemas)."""
    text = json.dumps([s.full() for s in specs], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _positive_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class Agent:
    """A reusable agent: a model, tools and declared outputs. Each `run` is independent.

    `busts` collects every cache bust the guard saw in this agent's runs, including a
    fresh session whose opening (parameters, tools, system prompt) differs from the
    agent's earlier sessions.
    """

    def __init__(
        self,
        model: Model,
        tools: Iterable[Tool | ToolFunction] = (),
        *,
        outputs: OutputSpec = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        max_steps: int = 20,
        max_syntax_errors: int = 3,
        max_tool_retries: int = 3,
        max_result_chars: int | None = None,
        on_message: Callable[[Message], None] | None = None,
    ) -> None:
        self.max_steps = _positive_int(max_steps, "max_steps", 1)
        self.max_syntax_errors = _positive_int(max_syntax_errors, "max_syntax_errors", 1)
        self.max_tool_retries = _positive_int(max_tool_retries, "max_tool_retries", 0)
        if not isinstance(model, Model):
            raise ConfigurationError(f"model must be a warmloop Model, got {model!r}")
        self.model = model
        self.toolbox = Toolbox(tools, max_result_chars=max_result_chars)
        if SUBMIT in self.toolbox:
            raise ConfigurationError(f"{SUBMIT!r} is reserved for outputs; rename that tool")
        self.outputs = Outputs(outputs)
        self.tool_specs = (*self.toolbox.specs(), self.outputs.spec)
        self.fingerprint = tools_fingerprint(self.tool_specs)
        self.instructions = instructions
        self.on_message = on_message
        self.busts: list[Bust] = []
        self.opening: WireStream | None = None
        """The first request of this agent's first fresh session: later fresh sessions
        must open with the same bytes (parameters, tools, system prompt)."""

    def _runner(
        self,
        task: str | Mapping[str, object],
        history: Transcript | None,
        conversation_id: str | None,
    ) -> _Runner:
        if history is not None and not isinstance(history, Transcript):
            raise ConfigurationError(
                f"history must be a Transcript (e.g. run.transcript), got {type(history).__name__}"
            )
        if conversation_id is not None:
            validate_id(conversation_id)
        return _Runner(self, task_text(task), history, conversation_id)

    async def run(
        self,
        task: str | Mapping[str, object],
        *,
        history: Transcript | None = None,
        conversation_id: str | None = None,
    ) -> Run:
        """Run one task; with `history`, continue that conversation on a new branch.
        `conversation_id` names the conversation: it is the provider's routing key."""
        return await self._runner(task, history, conversation_id).run()

    def run_sync(
        self,
        task: str | Mapping[str, object],
        *,
        history: Transcript | None = None,
        conversation_id: str | None = None,
    ) -> Run:
        """`run` for code that is not async."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise ConfigurationError("run_sync was called inside an event loop; use await run()")
        runner = self._runner(task, history, conversation_id)
        try:
            return asyncio.run(runner.run())
        except KeyboardInterrupt as exc:
            runner.interrupted(exc)
            raise


def task_text(task: str | Mapping[str, object]) -> str:
    """A task string as is; named inputs as `name: value` lines."""
    if isinstance(task, str):
        text = task
    elif isinstance(task, Mapping):
        text = "\n".join(f"{name}: {value}" for name, value in task.items())
    else:
        raise ConfigurationError(f"the task must be a string or a mapping, got {task!r}")
    if not text.strip():
        raise ConfigurationError("the task is empty")
    return text


@dataclass
class _Runner:
    """One run's mutable state; created fresh per run, so every counter starts at zero."""

    agent: Agent
    task: str
    history: Transcript | None
    conversation_id: str | None
    transcript: Transcript = field(init=False)
    requests: list[RequestRecord] = field(default_factory=list)
    start: int = 0
    syntax_errors: int = 0
    failed_steps: int = 0

    def __post_init__(self) -> None:
        if self.history is not None:
            self.transcript = self.history.fork()
        else:
            self.transcript = Transcript(meta=Meta(created_at=time.time()))
        if self.conversation_id is not None:
            self.transcript.conversation = self.conversation_id
        if self.transcript.guard is None:
            self.transcript.guard = PrefixGuard()
        self.start = len(self.transcript)

    def append(self, message: Message) -> None:
        self.transcript.append(message)
        if self.agent.on_message is not None:
            self.agent.on_message(message)

    def interrupted(self, exc: BaseException) -> None:
        """Close the step in progress and attach the transcript to `exc`."""
        self.transcript.answer_pending(INTERRUPTED)
        exc.transcript = self.transcript  # type: ignore[attr-defined]

    async def run(self) -> Run:
        try:
            return await self.steps()
        except RunError as exc:
            exc.requests = list(self.requests)
            raise
        except Exception as exc:
            self.transcript.answer_pending(f"Not executed: the run stopped ({type(exc).__name__}).")
            raise RunAborted(
                f"the run stopped on an unexpected {type(exc).__name__}: {exc}",
                self.transcript,
                self.requests,
            ) from exc
        except (KeyboardInterrupt, asyncio.CancelledError) as exc:
            self.interrupted(exc)
            raise

    async def steps(self) -> Run:
        agent = self.agent
        if not len(self.transcript):
            self.append(SystemText(agent.instructions))
        self.append(UserText(self.task))
        for step in range(1, agent.max_steps + 1):
            turn = await self.query()
            if turn is None:
                continue
            if not turn.tool_calls:
                return await self.extract("You answered without calling a tool.")
            outputs = await self.act(turn, extracting=False)
            if outputs is not None:
                return self.finish(outputs, extracted=False)
            if self.failed_steps > agent.max_tool_retries:
                return await self.extract(f"{self.failed_steps} steps in a row failed.")
            if step == agent.max_steps - 1:
                self.append(Notice(f"One step left: call {SUBMIT} next.", only_tool=SUBMIT))
        return await self.extract("The step budget is used up.")

    def check(self, rendered: Rendered) -> PrefixCheck:
        """The guard's verdict on this request; a fresh session's first request is checked
        against the agent's opening instead (the cache its earlier sessions wrote)."""
        transcript, agent = self.transcript, self.agent
        assert transcript.guard is not None
        check = transcript.guard.check(rendered.wire, revision=transcript.revision)
        if self.history is None and not self.requests and agent.opening is None:
            agent.opening = rendered.wire  # the agent's first session: nothing to reuse yet
        elif self.history is None and not self.requests and agent.opening is not None:
            bust = opening_bust(agent.opening, rendered.wire)
            shared = 0 if bust else sum(len(text) for _, text in rendered.wire.opening)
            check = PrefixCheck(bust.position if bust else shared, rendered.length, bust)
        if check.bust is not None:
            agent.busts.append(check.bust)
        return check

    async def query(self) -> AssistantTurn | None:
        """One request; appends the assistant turn. None if it did not parse."""
        model = self.agent.model
        rendered = model.render(self.transcript, self.agent.tool_specs)
        check = self.check(rendered)
        sent_at, started = time.time(), time.perf_counter()
        try:
            response = await model.send(rendered, session_id=self.transcript.conversation)
        except ProviderError as exc:
            raise RequestFailed(str(exc), self.transcript) from exc
        self.requests.append(RequestRecord(response.usage, time.perf_counter() - started, check))
        self.transcript.meta = replace(
            self.transcript.meta,
            updated_at=time.time(),
            last_request_at=sent_at,
            model=model.name,
            tools_fingerprint=self.agent.fingerprint,
        )
        self.append(response.turn)
        problem = response.format_error
        if problem is None:
            self.syntax_errors = 0
            return response.turn
        self.syntax_errors += 1
        if self.syntax_errors >= self.agent.max_syntax_errors:
            raise SyntaxBudgetExceeded(
                f"{self.syntax_errors} consecutive model turns could not be parsed "
                f"(last: {problem.detail})",
                self.transcript,
            )
        self.append(UserText(problem.correction))
        return None

    async def act(self, turn: AssistantTurn, *, extracting: bool) -> BaseModel | None:
        """Answer every call of the turn, in order, appending each result as it comes;
        returns the outputs on a valid submit."""
        submitted: BaseModel | None = None
        failed = True
        for call in turn.tool_calls:
            if submitted is not None or (extracting and call.name != SUBMIT):
                reason = "the run was already submitted" if submitted else "only submit now"
                result = self.agent.toolbox.error(call, f"Not executed: {reason}.")
            elif call.name == SUBMIT:
                checked = self.agent.outputs.validate(call)
                if isinstance(checked, ToolResult):
                    result = checked
                else:
                    submitted = checked
                    result = ToolResult(call.id, call.name, SUBMITTED)
            else:
                result = await self.agent.toolbox.execute(call)
            failed = failed and result.is_error
            self.append(result)
        self.failed_steps = self.failed_steps + 1 if failed else 0
        return submitted

    async def extract(self, reason: str) -> Run:
        """Ask once more, over the same history, for `submit`; raise with the transcript if not."""
        prompt = self.agent.outputs.extract_prompt(reason)
        self.append(UserText(prompt, only_tool=SUBMIT))
        turn = await self.query()
        outputs = await self.act(turn, extracting=True) if turn and turn.tool_calls else None
        if outputs is None:
            raise ExtractFailed(
                f"the run ended without valid outputs ({reason} The extract step did not "
                f"submit valid outputs either); the transcript holds everything",
                self.transcript,
            )
        return self.finish(outputs, extracted=True)

    def finish(self, outputs: BaseModel, *, extracted: bool) -> Run:
        steps = len(self.requests)
        model = self.agent.model.name
        return Run(outputs, self.transcript, self.requests, steps, extracted, model, self.start)
