"""Acting on a turn's tool calls: answer each call in order, storing each result as it
comes (a returned tool never runs twice, a call whose result is stored is not run again),
keep the cache warm beside the tools, and leave the step with `Submitted` on valid
outputs."""

from __future__ import annotations

import contextlib
import inspect

from pydantic import BaseModel

from warmloop.agent.approvals import Verdict, any_waits, denial, verdict
from warmloop.agent.events import ToolFinished, ToolStarted
from warmloop.agent.exits import AwaitingApproval, HandedOff, Submitted
from warmloop.agent.handoff import NOT_RUN, TRANSFERRED, Handoff
from warmloop.agent.lineage import Parent, calling
from warmloop.agent.resumption import stored_results
from warmloop.agent.state import INTERRUPTED, RunState
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, ToolCall, ToolResult
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
        if any_waits(state.settings.toolbox, state.approvals, turn):
            pause: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()
        else:  # a run that ends waiting for a person keeps nothing warm itself
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
        the outputs on a valid submit, and whether every call failed. Calls that wait for
        a person's approval, and those after them, are left unanswered: `AwaitingApproval`."""
        state = self.state
        submitted: BaseModel | None = None
        failed = True
        stored = stored_results(state.transcript.messages)  # the turn is the newest
        waiting: list[ToolCall] = []
        handed: tuple[Handoff, ToolCall] | None = None
        for call in turn.tool_calls:
            decided = verdict(state.settings.toolbox, state.approvals, call)
            if call.id not in stored and (waiting or decided is Verdict.WAIT):
                waiting.append(call)  # a call after one that waits waits too: results in order
                continue
            handing = state.settings.handoffs.get(call.name)
            if call.id in stored:  # returned before a crash: never run again
                result = stored[call.id]
                if call.name == SUBMIT and not result.is_error:
                    checked = state.settings.outputs.validate(call)
                    submitted = None if isinstance(checked, ToolResult) else checked
                handed = handed or ((handing, call) if handing and not submitted else None)
                failed = failed and result.is_error
                continue
            if handed is not None:  # after a handoff nothing else of the turn runs
                result = tools_error(state, call, NOT_RUN.format(name=handed[0].agent_name), cap)
            elif handing is not None and submitted is None and not extracting:
                handed = (handing, call)
                await self.handing(handing)
                result = ToolResult(call.id, call.name, TRANSFERRED.format(name=handing.agent_name))
            else:
                result, outputs = await self.answer(
                    call, tools, cap, submitted, extracting, decided
                )
                submitted = submitted or outputs
            failed = failed and result.is_error
            state.append(result)
            await state.persisted()  # each result as it comes: a returned tool never runs twice
        if waiting:
            raise AwaitingApproval(tuple(waiting))
        if handed is not None:
            raise HandedOff(*handed)
        return submitted, failed

    async def handing(self, to: Handoff) -> None:
        """Tell `on_handoff` (with the run's context) that the conversation is handed on."""
        if to.on_handoff is not None:
            told = to.on_handoff(self.context())
            if inspect.isawaitable(told):
                await told

    async def answer(
        self,
        call: ToolCall,
        tools: Disclosure,
        cap: int | None,
        submitted: BaseModel | None,
        extracting: bool,
        decided: Verdict,
    ) -> tuple[ToolResult, BaseModel | None]:
        """The result of one call not answered yet, and the outputs when it is a valid
        submit: refused after a submit (or a non-submit while extracting), validated and
        checked (submit), denied, "interrupted" (unrepeatable and cut by a crash), or run."""
        state = self.state
        if submitted is not None or (extracting and call.name != SUBMIT):
            reason = "the run was already submitted" if submitted else "only submit now"
            return state.settings.toolbox.error(call, f"Not executed: {reason}.", cap), None
        if call.name == SUBMIT:
            checked = state.settings.outputs.validate(call)
            refusal = None if extracting else self.refusal(checked)
            if isinstance(checked, ToolResult):
                return checked, None
            if refusal is not None:
                return ToolResult(call.id, call.name, refusal, is_error=True), None
            return ToolResult(call.id, call.name, SUBMITTED), checked
        if decided is Verdict.DENY:
            return state.settings.toolbox.error(call, denial(state.approvals, call), cap), None
        approved = call.id in state.approvals  # it waited for this, so it never started
        if call.id in state.cut and not self.repeatable(call.name) and not approved:
            return state.settings.toolbox.error(call, INTERRUPTED, cap), None
        state.emit(ToolStarted(call))
        with tracing(state.settings.model).tool(call) as span, calling(self.parent(call)):
            execution = await tools.run(call)
            span.returned(execution.result)
            if execution.result.is_error:
                span.failed("timeout" if execution.timed_out else "tool_error")
        state.executions.append(execution)
        state.emit(ToolFinished(call, execution.result))
        return execution.result, None

    def context(self) -> RunContext[object]:
        """What a tool taking a `RunContext` is given in this step."""
        state = self.state
        usage = self.usage_so_far()
        messages = tuple(state.transcript.messages)
        return RunContext(state.deps, messages, usage, state.facts, state.step)

    def parent(self, call: ToolCall) -> Parent:
        """What a run started inside `call` learns of this one (`agent.lineage`)."""
        state = self.state
        hook = state.hook
        return Parent(
            state.transcript.conversation,
            call,
            state.children,
            state.transcript,
            hook.lease.session_id if hook is not None else None,
            hook.store if hook is not None else None,
            state.warn,
        )

    _usage_sum: tuple[int, Usage] = (0, Usage())
    """(how many of `sent` are added up, their usage): each step adds only its own."""

    def usage_so_far(self) -> Usage:
        """The usage of the run's requests so far (`requests`), added up as they are sent
        instead of again each step (`sent` only grows; each entry's record is set once),
        and of the runs its tool calls started (sub-agents): so usage adds up."""
        state = self.state
        counted, total = self._usage_sum
        if counted > len(state.sent):  # never: `sent` only grows; start over if it did not
            counted, total = 0, Usage()
        for sent in state.sent[counted:]:
            if sent.record is not None:
                total = total + sent.record.usage
        self._usage_sum = (len(state.sent), total)
        return sum((child.tree_usage for child in state.children), total)

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


def tools_error(state: RunState, call: ToolCall, text: str, cap: int | None) -> ToolResult:
    """An error result for `call` from the run's toolbox (encodable, capped)."""
    return state.settings.toolbox.error(call, text, cap)
