"""Acting on a turn's tool calls: answer each call in order, storing each result as it
comes (a returned tool never runs twice, a call whose result is stored is not run again),
keep the cache warm beside the tools, and leave the step with `Submitted` on valid
outputs."""

from __future__ import annotations

from pydantic import BaseModel

from warmloop.agent.events import ToolFinished, ToolStarted
from warmloop.agent.exits import Submitted
from warmloop.agent.resumption import stored_results
from warmloop.agent.state import INTERRUPTED, RunState
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, ToolResult
from warmloop.outputs import SUBMITTED, submitted
from warmloop.telemetry import tracing
from warmloop.tools.context import RunContext, running
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.toolbox import Disclosure


class Acting:
    """The acting seam of a run (see the module docstring), over the run's state."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    async def act(self, turn: AssistantTurn, *, extracting: bool) -> None:
        """Answer every call of the turn, in order, appending each result as it comes;
        raises `Submitted` on a valid submit. A pause for the tools (not for `submit`) is
        kept warm beside them."""
        state = self.state
        cap = state.settings.result_cap(state.facts)
        errors_to_model = state.settings.tool_errors_to_model
        tools = state.tools.step(
            state.transcript, max_result_chars=cap, errors_to_model=errors_to_model
        )
        pause = state.pauses.for_turn(
            turn,
            state.settings.toolbox,
            state.facts,
            state.transcript,
            extracting=extracting,
        )
        async with pause:
            with running(self.context()):
                submitted, failed = await self.run_calls(turn, tools, cap, extracting=extracting)
        for notice in tools.announcements():  # tools discovered in this step, taught once
            state.append(notice)
        await state.persisted()
        state.failed_steps = state.failed_steps + 1 if failed else 0
        if submitted is not None:
            raise Submitted(submitted, extracted=extracting)

    async def run_calls(
        self, turn: AssistantTurn, tools: Disclosure, cap: int | None, *, extracting: bool
    ) -> tuple[BaseModel | None, bool]:
        """Answer every call of the turn, in order, storing each result as it comes (a
        returned tool never runs twice, a call whose result is stored is not run again);
        the outputs on a valid submit, and whether every call failed."""
        state = self.state
        submitted: BaseModel | None = None
        failed = True
        stored = stored_results(state.transcript.messages)  # the turn is the newest
        for call in turn.tool_calls:
            if call.id in stored:  # returned before a crash: never run again
                result = stored[call.id]
                if call.name == SUBMIT and not result.is_error:
                    checked = state.settings.outputs.validate(call)
                    submitted = None if isinstance(checked, ToolResult) else checked
                failed = failed and result.is_error
                continue
            if submitted is not None or (extracting and call.name != SUBMIT):
                reason = "the run was already submitted" if submitted else "only submit now"
                result = state.settings.toolbox.error(call, f"Not executed: {reason}.", cap)
            elif call.name == SUBMIT:
                checked = state.settings.outputs.validate(call)
                refusal = None if extracting else self.refusal(checked)
                if isinstance(checked, ToolResult):
                    result = checked
                elif refusal is not None:
                    result = ToolResult(call.id, call.name, refusal, is_error=True)
                else:
                    submitted = checked
                    result = ToolResult(call.id, call.name, SUBMITTED)
            elif call.id in state.cut and not self.repeatable(call.name):
                result = state.settings.toolbox.error(call, INTERRUPTED, cap)
            else:
                state.emit(ToolStarted(call))
                with tracing(state.settings.model).tool(call) as span:
                    execution = await tools.run(call)
                    span.returned(execution.result)
                    if execution.result.is_error:
                        span.failed("timeout" if execution.timed_out else "tool_error")
                state.executions.append(execution)
                result = execution.result
                state.emit(ToolFinished(call, result))
            failed = failed and result.is_error
            state.append(result)
            await state.persisted()  # each result as it comes: a returned tool never runs twice
        return submitted, failed

    def context(self) -> RunContext[object]:
        """What a tool taking a `RunContext` is given in this step."""
        state = self.state
        usage = self.usage_so_far()
        messages = tuple(state.transcript.messages)
        return RunContext(state.deps, messages, usage, state.facts, state.step)

    _usage_sum: tuple[int, Usage] = (0, Usage())
    """(how many of `sent` are added up, their usage): each step adds only its own."""

    def usage_so_far(self) -> Usage:
        """The usage of the run's requests so far (`requests`), added up as they are sent
        instead of again each step (`sent` only grows; each entry's record is set once)."""
        state = self.state
        counted, total = self._usage_sum
        if counted > len(state.sent):  # never: `sent` only grows; start over if it did not
            counted, total = 0, Usage()
        for sent in state.sent[counted:]:
            if sent.record is not None:
                total = total + sent.record.usage
        self._usage_sum = (len(state.sent), total)
        return total

    def refusal(self, outputs: BaseModel | ToolResult) -> str | None:
        """Why the output check refuses valid `outputs`, counted; None to accept. Every
        submit is checked alike: the step budget ends a run whose answers keep being refused,
        in the extract step, which is never refused."""
        state = self.state
        check = state.settings.check_outputs
        if check is None or isinstance(outputs, ToolResult):
            return None
        problem = check(submitted(outputs), state.transcript.messages[state.start :])
        if problem is not None:
            state.refused_outputs += 1
        return problem

    def repeatable(self, name: str) -> bool:
        tool = self.state.settings.toolbox.get(name)
        return tool is None or tool.repeatable
