"""The request of a step, in named seams: render; before the request, maintain (the planner
may rewrite the conversation), check the guard and pick the TTL; send (a rejection for the
window is learned and retried once); after the response, record it and tell the keep-alive;
append the turn. A turn that did not parse leaves as a `FormatError` carrying its
correction, or ends the run once the syntax budget is used up."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from warmloop.agent.events import CacheBust, CacheMiss, RequestAnswered, RequestSent
from warmloop.agent.exits import FormatError
from warmloop.agent.partial import PartialOutputs
from warmloop.agent.result import RequestFailed, SyntaxBudgetExceeded, UsageLimitExceeded
from warmloop.agent.state import RunState
from warmloop.errors import ContextWindowExceeded, ProviderError
from warmloop.facts.model_facts import MIN_WINDOW
from warmloop.keepalive.sent import SentRequest
from warmloop.maintenance.horizon import requests_ahead
from warmloop.messages import AssistantTurn, UserText
from warmloop.providers.base import Model, ModelResponse, Rendered
from warmloop.providers.deltas import StreamingModel
from warmloop.wire.guard import PrefixCheck, PrefixGuard
from warmloop.wire.request_record import RequestRecord


@dataclass(frozen=True)
class Outgoing:
    """A request on its way: the conversation as rendered (what the guard and the planner
    read), what goes on the wire (written with a longer TTL, perhaps), the guard's check,
    and when it went out (wall clock, a timer, the keep-alive's clock)."""

    rendered: Rendered
    sending: Rendered
    check: PrefixCheck
    ttl: str | None
    """The TTL `sending` is written with, when not the model's own."""
    sent_at: float
    started: float
    clock: float


class RequestCycle:
    """The request seams of a run (see the module docstring), over the run's state."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    async def query(self) -> AssistantTurn:
        """One request; appends the assistant turn and returns it."""
        state = self.state
        rendered = await self.maintain(self.render())
        outgoing = self.before_request(rendered)
        self.within_limits(outgoing)
        number = len(state.sent) + 1
        if outgoing.check.bust is not None:
            state.emit(CacheBust(number, outgoing.check.bust))
        state.emit(RequestSent(number))
        outgoing, response = await self.send(outgoing)
        misses = len(state.learned.misses)
        record = self.after_response(outgoing, response)
        state.emit(RequestAnswered(number, record))
        for miss in state.learned.misses[misses:]:  # the guard named why it read less
            state.emit(CacheMiss(number, miss))
        return await self.appended_turn(response)

    def render(self) -> Rendered:
        state = self.state
        return state.settings.model.render(state.transcript, state.settings.tool_specs)

    async def maintain(self, rendered: Rendered, *, forced: bool = False) -> Rendered:
        """Let the planner rewrite the conversation before this request; the request to
        send (rendered again when the conversation changed)."""
        state = self.state
        if state.maintainer is None:
            return rendered
        # This step, the rest, the extract step; the extract step's own request is the last.
        budget_left = 1 if state.extracting else state.settings.max_steps - state.step + 2
        remaining = requests_ahead(
            len(state.sent),
            budget_left,
            state.learned.run_lengths,
            widths=state.widths,
        )
        changes = await state.maintainer.maintain(
            state.transcript,
            rendered,
            remaining=remaining,
            forced=forced,
            cap=state.settings.result_cap(state.facts),
        )
        if not changes:
            return rendered
        for change in changes:
            if state.hook is not None:  # stored with its archive rows first; raises: not adopted
                await state.hook.stored(change.transcript, change.rewrite)
            state.transcript = change.transcript
            state.maintained(change.event)
        return self.render()

    def before_request(self, rendered: Rendered) -> Outgoing:
        """The guard's check, and the request to send: what it writes lives longer,
        perhaps (markers and a TTL only, the same prompt)."""
        state = self.state
        check = self.check(rendered)
        sending, ttl = state.pauses.with_retention(rendered, state.facts, len(state.sent))
        clock = state.pauses.now()
        return Outgoing(rendered, sending, check, ttl, time.time(), time.perf_counter(), clock)

    def within_limits(self, outgoing: Outgoing) -> None:
        """`UsageLimitExceeded` when the request would pass one of the run's limits: it is
        never sent. Its cached prefix is the last request's while the cache is warm (within
        its TTL, the prefix held)."""
        state = self.state
        if state.limits is None:
            return
        last = state.sent[-1] if state.sent else None
        ttl = state.facts.profile.ttl_seconds
        warm = last is not None and outgoing.clock - last.at < ttl and outgoing.check.bust is None
        so_far = state.limits.so_far(
            state.usages(),
            state.facts,
            outgoing.sending.wire,
            last_prompt=last.prompt_tokens if last is not None else 0,
            warm=warm,
            ttl=outgoing.ttl,
        )
        passed = state.limits.passed(len(state.sent), so_far)
        if passed is not None:
            limit, reason = passed
            raise UsageLimitExceeded(
                f"the run stopped before its next request: {reason}",
                state.transcript,
                state.requests,
                limit=limit,
                next_usage=so_far.next_usage,
                next_cost=so_far.next_dollars if state.facts.prices is not None else None,
            )

    def check(self, rendered: Rendered) -> PrefixCheck:
        """The guard's verdict on this request; a fresh session's first request is checked
        against the agent's opening instead (the cache its earlier sessions wrote)."""
        state = self.state
        transcript = state.transcript
        assert isinstance(transcript.guard, PrefixGuard)
        check = transcript.guard.check(rendered.wire, revision=transcript.revision)
        fresh = state.history is None and state.start == 0 and not state.sent and state.step <= 1
        return state.learned.checked(check, rendered.wire, rendered.length, fresh=fresh)

    async def send(self, outgoing: Outgoing) -> tuple[Outgoing, ModelResponse]:
        """The response, and the request it answers: a rejection for the window is learned
        and, with maintenance, retried once after a forced maintenance point."""
        state = self.state
        model, session = state.settings.model, state.transcript.conversation
        try:
            try:
                response = await self.sent_by(model, outgoing.sending, session)
            except ContextWindowExceeded as exc:
                outgoing = await self.overflowed(outgoing, exc)
                response = await self.sent_by(model, outgoing.sending, session)
            # Hosts repeat call ids (per turn, or `call_0` every turn): renamed here, once.
            return outgoing, replace(response, turn=state.transcript.unique_calls(response.turn))
        except ProviderError as exc:
            raise RequestFailed(str(exc), state.transcript) from exc

    async def sent_by(self, model: Model, rendered: Rendered, session: str) -> ModelResponse:
        """The model's answer to `rendered`: streamed, its deltas reported as events, when
        the run streams and the model can."""
        state = self.state
        if state.streaming and isinstance(model, StreamingModel):
            deltas = PartialOutputs(state.settings.outputs, state.emit)
            return await model.stream(rendered, session_id=session, deltas=deltas)
        return await model.send(rendered, session_id=session)

    async def overflowed(self, outgoing: Outgoing, exc: ContextWindowExceeded) -> Outgoing:
        """The retry of a request the window rejected (raises `exc` without maintenance)."""
        await self.window_learned(exc)
        if self.state.maintainer is None:
            raise exc
        rendered = await self.maintain(outgoing.rendered, forced=True)
        check = self.check(rendered)
        return replace(outgoing, rendered=rendered, sending=rendered, check=check, ttl=None)

    async def window_learned(self, exc: ContextWindowExceeded) -> None:
        """A rejection named the window: a fact for the rest of this conversation (kept in
        its meta, so a stored session remembers it)."""
        state = self.state
        if exc.window is None or exc.window < MIN_WINDOW:
            return
        state.facts = state.facts.told_window(exc.window, "learned", "a rejection named it")
        state.transcript.meta = replace(state.transcript.meta, context_window=exc.window)
        await state.persisted(best_effort=True)  # stored now: the retry may fail as well
        if state.maintainer is not None and state.facts.window is not None:
            state.maintainer.learned_window(state.facts.window)

    def after_response(self, outgoing: Outgoing, response: ModelResponse) -> RequestRecord:
        """Record the request (a verdict that disagrees with the guard is reported, never
        raised), let the planner observe it and the keep-alive take it as the last."""
        state = self.state
        seconds = time.perf_counter() - outgoing.started
        record = RequestRecord(response.usage, seconds, outgoing.check, response.verdict)
        if (disagreement := record.disagreement()) is not None:
            state.warnings.append(f"request {len(state.sent) + 1}: {disagreement}")
        prompt, cold = response.usage.prompt_tokens, None
        if state.limits is not None:
            state.limits.observed(outgoing.sending.wire, prompt)
        if state.maintainer is not None:
            plan = state.maintainer.observed(state.transcript, outgoing.rendered, response.usage)
            # A cold resume prunes first (planner: "cold"), so a miss re-sends only the rest.
            cold = max(prompt - plan.dropped_tokens, 0)
        chars = outgoing.rendered.length
        sending, clock, ttl = outgoing.sending, outgoing.clock, outgoing.ttl
        state.sent.append(SentRequest(sending, clock, prompt, chars, cold, ttl, record))
        # The keep-alive reads the run's records (the gap is learned); a miss is named.
        if (miss := state.pauses.sent()) is not None:
            state.learned.misses.append(miss)
        state.transcript.meta = replace(
            state.pauses.learned_meta(state.transcript.meta),
            updated_at=time.time(),
            last_request_at=outgoing.sent_at,
            model=state.settings.model.name,
            tools_fingerprint=state.settings.fingerprint,
        )
        return record

    async def appended_turn(self, response: ModelResponse) -> AssistantTurn:
        """Append the response's turn, stored before any of its tools runs; one that did not
        parse is counted, and leaves with its correction (`FormatError`) or, the syntax
        budget used up, ends the run."""
        state = self.state
        state.append(response.turn)
        state.widths[len(response.turn.tool_calls)] += 1
        problem = response.format_error
        if problem is None:
            await state.persisted()
            state.syntax_errors = 0
            return response.turn
        state.syntax_errors += 1
        if state.syntax_errors >= state.settings.max_syntax_errors:
            await state.persisted()
            raise SyntaxBudgetExceeded(
                f"{state.syntax_errors} consecutive model turns could not be parsed "
                f"(last: {problem.detail})",
                state.transcript,
            )
        # Stored with its correction: a resumed run tells an unparseable turn by it.
        raise FormatError(UserText(problem.correction))
