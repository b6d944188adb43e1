"""The ReAct runtime: seed once, then per step query, parse, act, append. Nothing is rebuilt."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from warmloop.cache.guard import PrefixCheck, PrefixGuard
from warmloop.cache.pricing import CostReport, cost_report
from warmloop.cache.usage import Usage
from warmloop.errors import (
    ConfigurationError,
    ExtractFailed,
    ProviderError,
    RequestFailed,
    SyntaxBudgetExceeded,
)
from warmloop.outputs import SUBMIT, SUBMITTED, Outputs, OutputSpec
from warmloop.protocols import react_text
from warmloop.providers.base import Model
from warmloop.tools import Tool, Toolbox, ToolFunction
from warmloop.transcript import (
    AssistantTurn,
    Message,
    Notice,
    SystemText,
    ToolResult,
    Transcript,
    UserText,
)

DEFAULT_INSTRUCTIONS = (
    "You are an agent that completes tasks with tools. Call tools to gather what you need, "
    f"then call {SUBMIT} with your final outputs."
)


@dataclass(frozen=True)
class RequestRecord:
    """One model request: its usage, wall-clock seconds and prefix check."""

    usage: Usage
    seconds: float
    prefix: PrefixCheck


@dataclass
class Run:
    """A finished run: validated outputs, the full transcript, and per-request records."""

    outputs: BaseModel
    transcript: Transcript
    requests: list[RequestRecord]
    steps: int
    extracted: bool = False
    model: str = ""

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


class Agent:
    """A reusable agent: a model, tools and declared outputs. Each `run` is independent."""

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
        if max_steps < 1 or max_syntax_errors < 1 or max_tool_retries < 0:
            raise ConfigurationError(
                "max_steps and max_syntax_errors must be >= 1, max_tool_retries >= 0"
            )
        self.model = model
        self.toolbox = Toolbox(tools, max_result_chars=max_result_chars)
        if SUBMIT in self.toolbox:
            raise ConfigurationError(f"{SUBMIT!r} is reserved for outputs; rename that tool")
        self.outputs = Outputs(outputs)
        self.tool_specs = (*self.toolbox.specs(), self.outputs.spec)
        self.instructions = instructions
        self.max_steps = max_steps
        self.max_syntax_errors = max_syntax_errors
        self.max_tool_retries = max_tool_retries
        self.on_message = on_message

    async def run(
        self, task: str | Mapping[str, object], *, history: Transcript | None = None
    ) -> Run:
        """Run one task; with `history`, continue that conversation (follow-up questions)."""
        return await _Runner(self, task_text(task), history).run()

    def run_sync(
        self, task: str | Mapping[str, object], *, history: Transcript | None = None
    ) -> Run:
        """`run` for code that is not async."""
        return asyncio.run(self.run(task, history=history))


def task_text(task: str | Mapping[str, object]) -> str:
    """A task string as is; named inputs as `name: value` lines."""
    if isinstance(task, str):
        if not task.strip():
            raise ConfigurationError("the task is empty")
        return task
    return "\n".join(f"{name}: {value}" for name, value in task.items())


@dataclass
class _Runner:
    """One run's mutable state; created fresh per run, so every counter starts at zero."""

    agent: Agent
    task: str
    history: Transcript | None
    transcript: Transcript = field(init=False)
    guard: PrefixGuard = field(default_factory=PrefixGuard)
    requests: list[RequestRecord] = field(default_factory=list)
    syntax_errors: int = 0
    failed_steps: int = 0

    def __post_init__(self) -> None:
        self.transcript = self.history.copy() if self.history is not None else Transcript()
        if not len(self.transcript):
            self.append(SystemText(self.agent.instructions))
        self.append(UserText(self.task))

    def append(self, message: Message) -> None:
        self.transcript.append(message)
        if self.agent.on_message is not None:
            self.agent.on_message(message)

    async def run(self) -> Run:
        agent = self.agent
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
                self.append(Notice(f"One step left: call {SUBMIT} next."))
        return await self.extract("The step budget is used up.")

    async def query(self) -> AssistantTurn | None:
        """One request; appends the assistant turn. None if it did not parse."""
        model = self.agent.model
        rendered = model.render(self.transcript, self.agent.tool_specs)
        check = self.guard.check(rendered)
        started = time.perf_counter()
        try:
            response = await model.send(rendered, session_id=self.transcript.id)
        except ProviderError as exc:
            raise RequestFailed(str(exc), self.transcript) from exc
        self.requests.append(RequestRecord(response.usage, time.perf_counter() - started, check))
        self.append(response.turn)
        if response.format_error is None:
            self.syntax_errors = 0
            return response.turn
        self.syntax_errors += 1
        if self.syntax_errors >= self.agent.max_syntax_errors:
            raise SyntaxBudgetExceeded(
                f"{self.syntax_errors} consecutive model turns could not be parsed "
                f"(last: {response.format_error})",
                self.transcript,
            )
        self.append(UserText(react_text.correction(response.format_error)))
        return None

    async def act(self, turn: AssistantTurn, *, extracting: bool) -> BaseModel | None:
        """Answer every call of the turn, in order; returns outputs on a valid submit."""
        submitted: BaseModel | None = None
        results: list[ToolResult] = []
        for call in turn.tool_calls:
            if submitted is not None or (extracting and call.name != SUBMIT):
                reason = "the run was already submitted" if submitted else "only submit now"
                results.append(self.agent.toolbox.error(call, f"Not executed: {reason}."))
            elif call.name == SUBMIT:
                checked = self.agent.outputs.validate(call)
                if isinstance(checked, ToolResult):
                    results.append(checked)
                else:
                    submitted = checked
                    results.append(ToolResult(call.id, call.name, SUBMITTED))
            else:
                results.append(await self.agent.toolbox.execute(call))
        for result in results:
            self.append(result)
        failed = all(r.is_error for r in results)
        self.failed_steps = self.failed_steps + 1 if failed else 0
        return submitted

    async def extract(self, reason: str) -> Run:
        """Ask once more, over the same history, for `submit`; raise with the transcript if not."""
        self.append(UserText(self.agent.outputs.extract_prompt(reason)))
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
        return Run(outputs, self.transcript, self.requests, steps, extracted, model)
