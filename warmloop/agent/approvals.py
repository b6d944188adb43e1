"""Approvals: a tool marked `needs_approval` (the OpenAI Agents SDK's name) is not run until a
person decides. Its call ends the run as waiting (`WaitingForApproval`, with the calls in
`interruptions`), stored in the session with the calls unanswered; any process goes on with
`agent.resume(session, approvals={call_id: True | False | ToolDenied(...)})` (pydantic-ai's
`ToolDenied`): an approved call runs, a denied one is answered with the denial, and the
run continues on the same conversation, so its next request reads the cache.

While it waits, `agent.waiting(session)` keeps the cache warm by the keep-alive rule, as a
pause of the tool (`tool:<name>`): the request it repeats is the one that asked for the
call, and its history is how long this agent's earlier approvals of that tool took (its own
waits, and those the stored session records: `sessions.timeline`).

A call after one that waits waits too (results stay in the calls' order); `submit` in the
same turn included.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from warmloop.agent.result import RunError
from warmloop.errors import ConfigurationError
from warmloop.messages import AssistantTurn, Message, SystemText, ToolCall, UserText
from warmloop.sessions.locate import open_store
from warmloop.sessions.off_loop import off_loop
from warmloop.sessions.resume import INTERRUPTED_BY_STOP
from warmloop.sessions.store import SessionStore
from warmloop.sessions.timeline import StoredPauses, is_task, stored_pauses
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript
from warmloop.wire.request_record import RequestRecord

DENIED = "The tool call was denied."


@dataclass(frozen=True)
class ToolDenied:
    """A decision refusing a call, with what the model is told (pydantic-ai's name)."""

    message: str = DENIED


Decision = bool | ToolDenied
"""True runs the call; False or `ToolDenied(message)` answers it refused."""


class Verdict(Enum):
    """What happens to a call of the turn being acted on."""

    RUN = "run"
    WAIT = "wait"
    DENY = "deny"


class WaitingForApproval(RunError):
    """The run stopped at calls that need a person's approval: `interruptions` (the OpenAI
    Agents SDK's name), in order. It is stored in `session` (None: the run had no session,
    so nothing can resume it); `agent.resume(session, approvals=...)` goes on."""

    def __init__(
        self,
        message: str,
        transcript: Transcript,
        requests: Sequence[RequestRecord] = (),
        *,
        interruptions: Sequence[ToolCall] = (),
        session: str | None = None,
    ) -> None:
        super().__init__(message, transcript, requests)
        self.interruptions = tuple(interruptions)
        self.session = session


def waiting_error(
    calls: Sequence[ToolCall], transcript: Transcript, session: str | None
) -> WaitingForApproval:
    """The error a run ends with when `calls` wait for approval."""
    names = ", ".join(f"{c.name} ({c.id})" for c in calls)
    how = (
        f"agent.resume({session!r}, approvals={{call_id: True or ToolDenied(...)}}) goes on, "
        "in any process"
        if session is not None
        else "the run has no session= to resume it from: run it with session= to decide later"
    )
    return WaitingForApproval(
        f"the run waits for approval of {names}; {how}",
        transcript,
        interruptions=calls,
        session=session,
    )


def verdict(toolbox: Toolbox, approvals: Mapping[str, Decision], call: ToolCall) -> Verdict:
    """Whether `call` runs, waits for a decision, or is denied."""
    found = toolbox.get(call.name)
    if found is None or not found.needs_approval:
        return Verdict.RUN
    decision = approvals.get(call.id)
    if decision is None:
        return Verdict.WAIT
    return Verdict.RUN if decision is True else Verdict.DENY


def denial(approvals: Mapping[str, Decision], call: ToolCall) -> str:
    """What the model is told of a denied call."""
    decision = approvals.get(call.id)
    message = decision.message if isinstance(decision, ToolDenied) else DENIED
    return f"Not executed: {message}"


def any_waits(toolbox: Toolbox, approvals: Mapping[str, Decision], turn: AssistantTurn) -> bool:
    """Whether a call of the turn waits for a decision (then no pause is kept warm beside
    its tools: the run ends waiting at once)."""
    return any(verdict(toolbox, approvals, c) is Verdict.WAIT for c in turn.tool_calls)


def checked_approvals(
    approvals: Mapping[str, object] | None, pending: Sequence[ToolCall]
) -> dict[str, Decision]:
    """`approvals` checked against the calls that wait: each key one of their ids, each
    value True, False or a `ToolDenied`."""
    if approvals is None:
        return {}
    if not isinstance(approvals, Mapping):
        raise ConfigurationError(f"approvals must map call ids to decisions, got {approvals!r}")
    ids = {call.id for call in pending}
    decided: dict[str, Decision] = {}
    for call_id, decision in approvals.items():
        if call_id not in ids:
            waiting = ", ".join(sorted(ids)) or "none"
            raise ConfigurationError(
                f"approvals name call {call_id!r}, which does not wait for a decision "
                f"(the calls that wait: {waiting})"
            )
        if not isinstance(decision, bool | ToolDenied):
            raise ConfigurationError(
                f"the decision for {call_id!r} must be True, False or ToolDenied(message), "
                f"got {decision!r}"
            )
        decided[call_id] = decision
    return decided


def run_start(messages: Sequence[Message]) -> int:
    """Where the newest run of a stored conversation began (the `resume_at` that takes it
    up): its task's position, or 0 for a first run whose instructions it seeded."""
    task = next((i for i in range(len(messages) - 1, -1, -1) if is_task(messages, i)), None)
    if task is None:
        raise ConfigurationError("the session holds no run to resume (no task was stored)")
    return 0 if task == 1 and isinstance(messages[0], SystemText) else task


def task_at(messages: Sequence[Message], start: int) -> str:
    """The task text of the run that began at `start`."""
    task = next(m for m in messages[start:] if isinstance(m, UserText))
    return task.text


def before_turn(transcript: Transcript) -> Transcript | None:
    """The conversation as the request that asked for its pending calls sent it (what a
    keep-alive repeats while they wait), or None when no call is pending."""
    messages = transcript.messages
    if not transcript.pending_calls():
        return None
    turn = max(i for i, m in enumerate(messages) if isinstance(m, AssistantTurn))
    return Transcript(
        messages[:turn],
        conversation=transcript.conversation,
        revision=transcript.revision,
        meta=transcript.meta,
    )


async def stored_wait(
    session: str, store: SessionStore | str | os.PathLike[str] | None
) -> tuple[Transcript, StoredPauses]:
    """Stored session `session`'s transcript, and the pauses its requests show (the agent
    learns them: its earlier approvals' waits), read off the event loop."""
    opened = store if isinstance(store, SessionStore) else await off_loop(open_store, store)
    try:
        found = await off_loop(opened.load, session)
        if found is None or found.transcript is None:
            raise ConfigurationError(f"no stored session {session!r} to wait on")
        requests = await off_loop(opened.requests, session)
    finally:
        if opened is not store:
            await off_loop(opened.close)
    transcript = found.transcript
    return transcript, stored_pauses(transcript, requests, interrupted=INTERRUPTED_BY_STOP)
