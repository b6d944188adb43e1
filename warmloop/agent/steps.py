"""One run of an agent: seed once, then per step query, parse, act, append. Nothing is
rebuilt.

The run owns its state: the transcript (it applies every rewrite the maintainer plans, once
the session has stored it), its request records and events. It reads the agent's settings
(`Settings`, taken when the run starts) and adds to what the agent learns (`Learned`).

Every exit keeps the transcript: an error ends as a `RunError` carrying it (the original as
`__cause__`); Ctrl-C or a cancelled task closes the step in progress (pending calls get an
"interrupted" result, so pairing holds) and re-raises with the transcript attached as
`.transcript`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel

from warmloop.agent.resumption import Position, position, stored_results
from warmloop.agent.run import (
    ExtractFailed,
    RequestFailed,
    Run,
    RunAborted,
    RunError,
    SyntaxBudgetExceeded,
)
from warmloop.errors import ContextWindowExceeded, ProviderError
from warmloop.facts.model_facts import MIN_WINDOW, ModelFacts
from warmloop.keepalive.learned import Learned
from warmloop.keepalive.pauses import RunPauses
from warmloop.keepalive.pinger import KeepAlivePolicy
from warmloop.maintenance.horizon import requests_ahead
from warmloop.maintenance.maintainer import Maintainer, MaintenanceEvent
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.messages import AssistantTurn, Message, Meta, Notice, SystemText, ToolResult, UserText
from warmloop.outputs import MAX_OUTPUT_REFUSALS, SUBMITTED, OutputCheck, Outputs
from warmloop.providers.base import Model, Rendered
from warmloop.sessions.persistence import SessionPersistence
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.invoke import MIN_RESULT_CHARS, WINDOW_SHARE, Execution, default_result_cap
from warmloop.tools.schema import ToolSpec
from warmloop.tools.toolbox import Disclosure, Toolbox
from warmloop.transcript import Transcript
from warmloop.wire.guard import PrefixCheck, PrefixGuard
from warmloop.wire.request_record import RequestRecord

INTERRUPTED = "Not executed: the run was interrupted before this call finished."


@dataclass(frozen=True)
class Settings:
    """What a run reads of its agent, taken as the run starts (the Agent's attributes)."""

    model: Model
    toolbox: Toolbox
    outputs: Outputs
    tool_specs: tuple[ToolSpec, ...]
    fingerprint: str
    instructions: str
    max_steps: int
    max_syntax_errors: int
    max_tool_retries: int
    max_result_chars: int | Literal["window"] | None
    on_message: Callable[[Message], None] | None
    maintenance: MaintenancePolicy | None
    on_maintenance: Callable[[MaintenanceEvent], None] | None
    keepalive: KeepAlivePolicy | None = None
    check_outputs: OutputCheck | None = None

    def result_cap(self, facts: ModelFacts) -> int | None:
        """The cap on one tool result under `facts`: `max_result_chars`, where "window" is
        a share of a known window (no cap while the window is only assumed)."""
        if self.max_result_chars != "window":
            return self.max_result_chars
        if facts.window is None:
            return None
        # One result can never overflow the window: a share of it (tools/invoke.py); a
        # window too small to share still gets the smallest cap, not an error.
        return default_result_cap(max(facts.window, MIN_RESULT_CHARS * WINDOW_SHARE))


@dataclass
class Runner:
    """One run's mutable state; created fresh per run, so every counter starts at zero."""

    settings: Settings
    learned: Learned
    task: str
    history: Transcript | None
    conversation_id: str | None
    hook: SessionPersistence | None = None
    """A stored session's persistence hook, called after each complete unit is appended."""
    resume_at: int | None = None
    """With a stored session: where the run to go on with began (a crash cut it short)."""
    transcript: Transcript = field(init=False)
    requests: list[RequestRecord] = field(default_factory=list)
    start: int = 0
    step: int = 0
    syntax_errors: int = 0
    failed_steps: int = 0
    refused_outputs: int = 0
    extracting: bool = False
    """The extract step has begun: its request is the run's last."""
    """Submits the output check refused in this run (at most MAX_OUTPUT_REFUSALS)."""
    maintainer: Maintainer | None = None
    maintenance: list[MaintenanceEvent] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    tools: Disclosure = field(init=False)
    """This run's view of the agent's toolbox: what it taught, the calls it left running."""
    facts: ModelFacts = field(init=False)
    """The model's facts for this conversation: a window learned from a rejection (kept
    in the transcript's meta) overrides the model's."""
    warnings: list[str] = field(default_factory=list)
    cut: frozenset[str] = frozenset()
    """Calls a crash left without a result (a resumed run answers an unrepeatable one
    "interrupted" instead of running it again)."""
    pauses: RunPauses = field(init=False)
    """Keeping the cache warm while this run's tools run (`keepalive/pauses.py`)."""

    def __post_init__(self) -> None:
        if self.hook is not None:
            self.transcript = self.hook.transcript  # a stored session continues in place
            self.learned.stored(
                self.hook.lease.session_id, self.hook.pauses, self.transcript.conversation
            )
        elif self.history is not None:
            self.transcript = self.history.fork()
        else:
            self.transcript = Transcript(meta=Meta(created_at=time.time()))
        if self.conversation_id is not None:
            self.transcript.conversation = self.conversation_id
        if self.transcript.guard is None:
            self.transcript.guard = PrefixGuard()
        self.start = len(self.transcript) if self.resume_at is None else self.resume_at
        self.facts = self.settings.model.facts
        self.tools = self.settings.toolbox.conversation()
        self.pauses = RunPauses(
            self.settings.model,
            self.settings.keepalive,
            self.learned,
            self.maintained,
            self.warn,
        )

    def warn(self, line: str) -> None:
        """Something the user should know about the run (`run.warnings`)."""
        self.warnings.append(line)

    def maintained(self, event: MaintenanceEvent) -> None:
        """A maintenance action happened (a rewrite, a keep-alive): reported with the run."""
        self.maintenance.append(event)
        if self.settings.on_maintenance is not None:
            self.settings.on_maintenance(event)

    async def settle_facts(self) -> None:
        """Ask the model for what its server publishes (once per model), take a window this
        conversation learned earlier, say what is still assumed, and set up maintenance."""
        settings = self.settings
        facts = await settings.model.discover()
        meta = self.transcript.meta
        learned = meta.context_window if meta.model in ("", settings.model.name) else None
        if learned is not None:  # a fact about this model, not one a history had with another
            facts = facts.told_window(learned, "learned", "a rejection named it")
        self.facts = facts
        self.warnings = facts.assumptions(settings.model.name)
        if settings.maintenance is not None:
            self.maintainer = Maintainer(
                settings.model,
                settings.tool_specs,
                facts.profile,
                settings.maintenance,
                window=facts.window,
            )

    async def window_learned(self, exc: ContextWindowExceeded) -> None:
        """A rejection named the window: a fact for the rest of this conversation (kept in
        its meta, so a stored session remembers it)."""
        if exc.window is None or exc.window < MIN_WINDOW:
            return
        self.facts = self.facts.told_window(exc.window, "learned", "a rejection named it")
        self.transcript.meta = replace(self.transcript.meta, context_window=exc.window)
        await self.persisted(best_effort=True)  # stored now: the retry may fail as well
        if self.maintainer is not None and self.facts.window is not None:
            self.maintainer.learned_window(self.facts.window)

    def append(self, message: Message) -> None:
        self.transcript.append(message)
        if self.settings.on_message is not None:
            self.settings.on_message(message)

    async def persisted(self, *, best_effort: bool = False) -> None:
        """Hand what is new to the session hook (one transaction). On the way out of a
        failed run (`best_effort`) a store failure is dropped: the stored session stays at
        its last complete step, and resuming closes the step."""
        if self.hook is None:
            return
        try:
            await self.hook.appended(self.transcript, self.requests)
        except Exception:
            if not best_effort:
                raise

    def interrupted(self, exc: BaseException) -> None:
        """Close the step in progress and attach the transcript to `exc`."""
        self.transcript.answer_pending(INTERRUPTED)
        exc.transcript = self.transcript  # type: ignore[attr-defined]

    async def run(self) -> Run:
        try:
            await self.settle_facts()
            run = await self.steps()
            await self.pauses.settle()  # a keep-alive still on the wire is in the cost
            return run
        except RunError as exc:
            exc.requests = list(self.requests)
            raise
        except Exception as exc:
            self.transcript.answer_pending(f"Not executed: the run stopped ({type(exc).__name__}).")
            await self.persisted(best_effort=True)
            raise RunAborted(
                f"the run stopped on an unexpected {type(exc).__name__}: {exc}",
                self.transcript,
                self.requests,
            ) from exc
        except (KeyboardInterrupt, asyncio.CancelledError) as exc:
            self.interrupted(exc)
            await self.persisted(best_effort=True)
            raise

    async def steps(self) -> Run:
        settings = self.settings
        if self.start < len(self.transcript):  # a stored run a crash cut short goes on
            ended = await self.resumed(position(self.transcript.messages[self.start :], SUBMIT))
            if ended is not None:
                return ended
        else:
            if not len(self.transcript):
                self.append(SystemText(settings.instructions))
            else:
                self.pauses.started(self.transcript)  # a follow-up: the gap is learned
            self.append(UserText(self.task))
        for step in range(self.step + 1, settings.max_steps + 1):
            self.step = step
            turn = await self.query()
            if turn is None:
                continue
            ended = await self.stepped(turn)
            if ended is not None:
                return ended
        return await self.extract("The step budget is used up.")

    async def stepped(self, turn: AssistantTurn) -> Run | None:
        """Act on a step's turn; the run's end, or None to go on."""
        settings = self.settings
        if not turn.tool_calls:
            return await self.extract("You answered without calling a tool.")
        outputs = await self.act(turn, extracting=False)
        if outputs is not None:
            return self.finish(outputs, extracted=False)
        if self.failed_steps > settings.max_tool_retries:
            return await self.extract(f"{self.failed_steps} steps in a row failed.")
        if self.step == settings.max_steps - 1:
            self.append(Notice(f"One step left: call {SUBMIT} next.", only_tool=SUBMIT))
        return None

    async def resumed(self, at: Position) -> Run | None:
        """Take up the counters where the stored run stands and finish its last step (calls
        whose result is stored never run again); the run's end, or None to go on."""
        self.step, self.syntax_errors, self.failed_steps = (
            at.steps,
            at.syntax_errors,
            at.failed_steps,
        )
        self.cut = frozenset(call.id for call in self.transcript.pending_calls())
        if at.extract_prompt:
            return await self.extract("", resumed=at)
        return None if at.turn is None else await self.stepped(at.turn)

    def check(self, rendered: Rendered) -> PrefixCheck:
        """The guard's verdict on this request; a fresh session's first request is checked
        against the agent's opening instead (the cache its earlier sessions wrote)."""
        transcript = self.transcript
        assert isinstance(transcript.guard, PrefixGuard)
        check = transcript.guard.check(rendered.wire, revision=transcript.revision)
        fresh = self.history is None and self.start == 0 and not self.requests and self.step <= 1
        return self.learned.checked(check, rendered.wire, rendered.length, fresh=fresh)

    async def maintain(self, rendered: Rendered, *, forced: bool = False) -> Rendered:
        """Let the planner rewrite the conversation before this request; the request to
        send (rendered again when the conversation changed)."""
        if self.maintainer is None:
            return rendered
        settings = self.settings
        # This step, the rest, the extract step; the extract step's own request is the last.
        budget_left = 1 if self.extracting else settings.max_steps - self.step + 2
        remaining = requests_ahead(len(self.requests), budget_left, self.learned.run_lengths)
        changes = await self.maintainer.maintain(
            self.transcript,
            rendered,
            remaining=remaining,
            forced=forced,
            cap=settings.result_cap(self.facts),
        )
        if not changes:
            return rendered
        for change in changes:
            if self.hook is not None:  # stored with its archive rows first; raises: not adopted
                await self.hook.stored(change.transcript, change.rewrite)
            self.transcript = change.transcript
            self.maintained(change.event)
        return settings.model.render(self.transcript, settings.tool_specs)

    async def query(self) -> AssistantTurn | None:
        """One request; appends the assistant turn. None if it did not parse."""
        model = self.settings.model
        rendered = await self.maintain(model.render(self.transcript, self.settings.tool_specs))
        check = self.check(rendered)
        # What it writes lives longer, perhaps: markers and a TTL only, the same prompt.
        sending = self.pauses.with_retention(rendered, self.facts, len(self.requests))
        sent_at, started, clock = time.time(), time.perf_counter(), self.pauses.now()
        try:
            try:
                response = await model.send(sending, session_id=self.transcript.conversation)
            except ContextWindowExceeded as exc:
                await self.window_learned(exc)
                if self.maintainer is None:
                    raise
                # A forced maintenance point, then one retry.
                rendered = await self.maintain(rendered, forced=True)
                check = self.check(rendered)
                sending = rendered
                response = await model.send(rendered, session_id=self.transcript.conversation)
            # Hosts repeat call ids (per turn, or `call_0` every turn): renamed here, once.
            response = replace(response, turn=self.transcript.unique_calls(response.turn))
        except ProviderError as exc:
            raise RequestFailed(str(exc), self.transcript) from exc
        record = RequestRecord(
            response.usage, time.perf_counter() - started, check, response.verdict
        )
        self.requests.append(record)
        if (disagreement := record.disagreement()) is not None:  # reported, never raised
            self.warnings.append(f"request {len(self.requests)}: {disagreement}")
        prompt, cold = response.usage.prompt_tokens, None
        if self.maintainer is not None:
            plan = self.maintainer.observed(self.transcript, rendered, response.usage)
            # A cold resume prunes first (planner: "cold"), so a miss re-sends only the rest.
            cold = max(prompt - plan.dropped_tokens, 0)
        self.pauses.sent(sending, clock, prompt, cold, rendered.length)
        self.transcript.meta = replace(
            self.transcript.meta,
            updated_at=time.time(),
            last_request_at=sent_at,
            model=model.name,
            tools_fingerprint=self.settings.fingerprint,
        )
        self.append(response.turn)
        problem = response.format_error
        if problem is None:
            await self.persisted()  # the turn is stored before any of its tools runs
            self.syntax_errors = 0
            return response.turn
        self.syntax_errors += 1
        if self.syntax_errors >= self.settings.max_syntax_errors:
            await self.persisted()
            raise SyntaxBudgetExceeded(
                f"{self.syntax_errors} consecutive model turns could not be parsed "
                f"(last: {problem.detail})",
                self.transcript,
            )
        # Stored with its correction: a resumed run tells an unparseable turn by it.
        self.append(UserText(problem.correction))
        await self.persisted()
        return None

    async def act(self, turn: AssistantTurn, *, extracting: bool) -> BaseModel | None:
        """Answer every call of the turn, in order, appending each result as it comes;
        returns the outputs on a valid submit. A pause for the tools (not for `submit`) is
        kept warm beside them."""
        cap = self.settings.result_cap(self.facts)
        tools = self.tools.step(self.transcript, max_result_chars=cap)
        pause = self.pauses.for_turn(
            turn, self.settings.toolbox, self.facts, self.transcript, extracting=extracting
        )
        async with pause:
            submitted, failed = await self.run_calls(turn, tools, cap, extracting=extracting)
        for notice in tools.announcements():  # tools discovered in this step, taught once
            self.append(notice)
        await self.persisted()
        self.failed_steps = self.failed_steps + 1 if failed else 0
        return submitted

    async def run_calls(
        self, turn: AssistantTurn, tools: Disclosure, cap: int | None, *, extracting: bool
    ) -> tuple[BaseModel | None, bool]:
        """Answer every call of the turn, in order, storing each result as it comes (a
        returned tool never runs twice, a call whose result is stored is not run again);
        the outputs on a valid submit, and whether every call failed."""
        submitted: BaseModel | None = None
        failed = True
        stored = stored_results(self.transcript.messages)  # the turn is the newest
        for call in turn.tool_calls:
            if call.id in stored:  # returned before a crash: never run again
                result = stored[call.id]
                if call.name == SUBMIT and not result.is_error:
                    checked = self.settings.outputs.validate(call)
                    submitted = None if isinstance(checked, ToolResult) else checked
                failed = failed and result.is_error
                continue
            if submitted is not None or (extracting and call.name != SUBMIT):
                reason = "the run was already submitted" if submitted else "only submit now"
                result = self.settings.toolbox.error(call, f"Not executed: {reason}.", cap)
            elif call.name == SUBMIT:
                checked = self.settings.outputs.validate(call)
                refusal = None if extracting else self.refusal(checked)
                if isinstance(checked, ToolResult):
                    result = checked
                elif refusal is not None:
                    result = ToolResult(call.id, call.name, refusal, is_error=True)
                else:
                    submitted = checked
                    result = ToolResult(call.id, call.name, SUBMITTED)
            elif call.id in self.cut and not self.repeatable(call.name):
                result = self.settings.toolbox.error(call, INTERRUPTED, cap)
            else:
                execution = await tools.run(call)
                self.executions.append(execution)
                result = execution.result
            failed = failed and result.is_error
            self.append(result)
            await self.persisted()  # each result as it comes: a returned tool never runs twice
        return submitted, failed

    def refusal(self, outputs: BaseModel | ToolResult) -> str | None:
        """Why the output check refuses valid `outputs`, counted; None to accept. Bounded
        (MAX_OUTPUT_REFUSALS per run), so a run always ends; the extract step is never
        refused."""
        check = self.settings.check_outputs
        if check is None or isinstance(outputs, ToolResult):
            return None
        if self.refused_outputs >= MAX_OUTPUT_REFUSALS:
            return None
        problem = check(outputs, self.transcript.messages[self.start :])
        if problem is not None:
            self.refused_outputs += 1
        return problem

    def repeatable(self, name: str) -> bool:
        tool = self.settings.toolbox.get(name)
        return tool is None or tool.repeatable

    async def extract(self, reason: str, *, resumed: Position | None = None) -> Run:
        """Ask once more, over the same history, for `submit`; raise with the transcript if
        not. `resumed`: the stored run had begun its extract step."""
        self.extracting = True
        if resumed is None:
            prompt = self.settings.outputs.extract_prompt(reason)
            self.append(UserText(prompt, only_tool=SUBMIT))
        stored = resumed.extract_turn if resumed is not None else None
        turn = stored if stored is not None else await self.query()
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
        model = self.settings.model.name
        self.pauses.finished(steps, self.transcript.conversation)
        return Run(
            outputs,
            self.transcript,
            self.requests,
            steps,
            extracted,
            model,
            self.start,
            self.maintenance,
            self.executions,
            list(self.tools.stuck),
            warnings=list(self.warnings),
            facts=self.facts,
        )
