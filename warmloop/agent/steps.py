"""One run of an agent: seed once, then per step query, then act (the two-line step of
mini-swe-agent), until a way out. Nothing is rebuilt.

The run owns its state (`agent/state.py`) and two collaborators over it: the request cycle
(`agent/request.py`) and acting on tool calls (`agent/acting.py`). Every way out of a step
is an exception carrying what the run appends (`agent/exits.py`), caught here: `Submitted`
ends the run with its outputs, a `FormatError` appends its correction and goes on,
`Exhausted` goes to the extract step.

Every exit keeps the transcript: an error ends as a `RunError` carrying it (the original as
`__cause__`); Ctrl-C or a cancelled task closes the step in progress (pending calls get an
"interrupted" result, so pairing holds) and re-raises with the transcript attached as
`.transcript`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import NoReturn

from warmloop.agent.acting import Acting
from warmloop.agent.approvals import waiting_error
from warmloop.agent.events import FinalOutput
from warmloop.agent.exits import AwaitingApproval, Exhausted, FormatError, HandedOff, Submitted
from warmloop.agent.lineage import tracked
from warmloop.agent.request import RequestCycle
from warmloop.agent.result import ChildRun, ExtractFailed, Run, RunAborted, RunError
from warmloop.agent.resumption import Position, position
from warmloop.agent.state import INTERRUPTED, RunState
from warmloop.errors import WarmloopError
from warmloop.messages import AssistantTurn, Message, Notice, SystemText, ToolResult, UserText
from warmloop.telemetry import tracing
from warmloop.tools.gateway import SUBMIT

__all__ = ["INTERRUPTED", "Runner"]


class Runner:
    """One run: its state, and the loop over its two collaborators, the request cycle
    (query) and acting (act), which work on the same state."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.request = RequestCycle(state)
        self.acting = Acting(state)

    async def run(self) -> Run:
        """The run, inside an `invoke_agent` span when its model is instrumented, recorded
        as a child of the run whose tool call started it (`agent.lineage`)."""
        state = self.state
        name = state.settings.name
        with tracing(state.settings.model).run(state.transcript.conversation, name) as span:
            try:
                return await tracked(state, self.run_steps)  # a child records itself
            finally:
                span.ended(state.usages(), state.facts)

    async def run_steps(self) -> Run:
        state = self.state
        try:
            await state.settle_facts()
            run = await self.steps()
            await state.pauses.settle()  # a keep-alive still on the wire is in the cost
            state.emit(FinalOutput(run.outputs, run))
            return run
        except RunError as exc:
            exc.ended(state.settings.model.name, state.requests, state.usages(), state.facts)
            raise
        except Exception as exc:
            state.transcript.answer_pending(
                f"Not executed: the run stopped ({type(exc).__name__})."
            )
            await state.persisted(best_effort=True)
            # A warmloop error already says what was wrong and what to do; anything else is
            # a bug or a library's surprise, named by its type.
            if isinstance(exc, WarmloopError):
                message = f"the run stopped: {exc}"
            else:
                message = f"the run stopped on an unexpected {type(exc).__name__}: {exc}"
            aborted = RunAborted(message, state.transcript)
            aborted.ended(state.settings.model.name, state.requests, state.usages(), state.facts)
            raise aborted from exc
        except (KeyboardInterrupt, asyncio.CancelledError) as exc:
            self.interrupted(exc)
            await state.persisted(best_effort=True)
            raise

    async def steps(self) -> Run:
        """Seed the run (or take up a stored one) and step until a way out: submitted
        outputs end it; a step loop exhausted without them goes to the extract step."""
        state = self.state
        try:
            try:
                await self.opened()
                while state.step < state.settings.max_steps:
                    state.step += 1
                    await self.one_step()
                raise self.exhausted("The step budget is used up.")
            except Exhausted as end:
                await self.extract(end)
        except Submitted as end:
            return self.finish(end)
        except HandedOff as end:
            return await self.handed_off(end)
        except AwaitingApproval as end:
            hook = state.hook
            session = hook.lease.session_id if hook is not None else None
            raise waiting_error(end.calls, state.transcript, session) from None

    async def one_step(self) -> None:
        """Query, then act; a turn that did not parse gets its correction instead."""
        try:
            await self.acted(await self.request.query())
        except FormatError as problem:
            await self.corrected(problem)

    async def corrected(self, problem: FormatError) -> None:
        """Append a format error's correction, stored with the turn it answers (a resumed
        run tells an unparseable turn by it)."""
        state = self.state
        state.append(*problem.messages)
        await state.persisted()

    async def opened(self) -> None:
        """Seed a new run (the instructions once, then the task), or take up a stored run
        a crash cut short."""
        state = self.state
        if state.start < len(state.transcript):
            await self.resumed(position(state.transcript.messages[state.start :], SUBMIT))
            return
        if not len(state.transcript):
            state.append(SystemText(state.settings.instructions))
        else:
            state.pauses.started(state.transcript)  # a follow-up: the gap is learned
        state.append(UserText(state.task))

    async def acted(self, turn: AssistantTurn) -> None:
        """Act on a step's turn; `Exhausted` when the step loop ends without outputs."""
        state = self.state
        settings = state.settings
        if not turn.tool_calls:
            self.answered_in_text(turn, extracting=False)
            raise self.exhausted("You answered without calling a tool.")
        await self.acting.act(turn, extracting=False)
        if state.failed_steps > settings.max_tool_retries:
            raise self.exhausted(f"{state.failed_steps} steps in a row failed.")
        if state.step == settings.max_steps - 1:
            state.append(Notice(f"One step left: call {SUBMIT} next.", only_tool=SUBMIT))

    async def resumed(self, at: Position) -> None:
        """Take up the counters where the stored run stands and finish its last step (calls
        whose result is stored never run again)."""
        state = self.state
        state.step, state.syntax_errors, state.failed_steps = (
            at.steps,
            at.syntax_errors,
            at.failed_steps,
        )
        state.cut = frozenset(call.id for call in state.transcript.pending_calls())
        if at.extract_prompt:  # its prompt is stored, and perhaps its answer
            raise Exhausted("", turn=at.extract_turn)
        if at.turn is not None:
            await self.acted(at.turn)

    def answered_in_text(self, turn: AssistantTurn, *, extracting: bool) -> None:
        """A turn of text without a call is the answer where the output is text (`answer:
        str`, `outputs=str`): `Submitted`. The output check refuses it as it refuses a
        submit, and the refusal goes to the extract step (the run's stored messages say
        where it stands, as they do after any turn without a call)."""
        state = self.state
        outputs = state.settings.outputs.from_text(turn.text)
        if outputs is None:
            return
        refusal = None if extracting else self.acting.refusal(outputs)
        if refusal is not None:
            raise self.exhausted(f"Your answer was refused: {refusal}")
        raise Submitted(outputs, extracted=extracting)

    def exhausted(self, reason: str) -> Exhausted:
        """The step loop's end without outputs, with the extract prompt to append."""
        prompt = self.state.settings.outputs.extract_prompt(reason)
        return Exhausted(reason, UserText(prompt, only_tool=SUBMIT))

    async def extract(self, end: Exhausted) -> NoReturn:
        """Ask once more, over the same history, for `submit`: `Submitted`, or
        `ExtractFailed` with the transcript."""
        state = self.state
        state.extracting = True
        state.append(*end.messages)
        turn = end.turn
        if turn is None:
            try:
                turn = await self.request.query()
            except FormatError as problem:
                await self.corrected(problem)
        if turn is not None and turn.tool_calls:
            await self.acting.act(turn, extracting=True)
        elif turn is not None:
            self.answered_in_text(turn, extracting=True)
        last_error = last_rejection(state.transcript.messages[state.start :])
        shown = (  # on one line: the CLI prints an error as one line
            f"; the last {' '.join(last_error.split())}"
            if last_error is not None
            else f"; the model never called {SUBMIT}"
        )
        raise ExtractFailed(
            f"the run ended without valid outputs ({end.reason} The extract step did not "
            f"submit valid outputs either); the transcript holds everything{shown}",
            state.transcript,
            last_error=last_error,
        )

    async def handed_off(self, end: HandedOff) -> Run:
        """The target of a handoff goes on with the conversation (a fork: the same routing
        key, every message so far) to its end; this run ends with its outputs, its run a
        child row (`kind="handoff"`)."""
        state = self.state
        to = end.handoff
        task = to.task()
        run = await to.agent.run(task, history=state.transcript, deps=state.deps)
        facts = run.facts
        state.children.append(
            ChildRun(
                to.agent_name,
                end.call.id,
                task,
                run.model,
                tuple(run.usages()),
                run=run,
                priced_as=facts.priced_as if facts is not None else None,
                kind="handoff",
            )
        )
        own = self.finish(Submitted(run.outputs, extracted=run.extracted))
        return replace(own, transcript=run.transcript, convert=run.convert)

    def interrupted(self, exc: BaseException) -> None:
        """Close the step in progress and attach the transcript to `exc`."""
        state = self.state
        state.transcript.answer_pending(INTERRUPTED)
        exc.transcript = state.transcript  # type: ignore[attr-defined]

    def finish(self, end: Submitted) -> Run:
        state = self.state
        steps = len(state.sent)
        state.pauses.finished(steps, state.transcript.conversation)
        return Run(
            end.outputs,
            state.transcript,
            state.requests,
            steps,
            end.extracted,
            state.settings.model.name,
            state.start,
            state.maintenance,
            state.executions,
            list(state.tools.stuck),
            warnings=list(state.warnings),
            facts=state.facts,
            convert=state.settings.outputs.output,
            children=list(state.children),
        )


def last_rejection(messages: Sequence[Message]) -> str | None:
    """What the model was told when its last submit among `messages` was rejected (a
    validation error, or the output check's refusal); None when none was."""
    for message in reversed(messages):
        if isinstance(message, ToolResult) and message.name == SUBMIT and message.is_error:
            return message.content
    return None
