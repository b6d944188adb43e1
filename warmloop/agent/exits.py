"""The ways out of a step, as exceptions that carry what the run appends (mini-swe-agent's
`InterruptAgentFlow`): the loop catches each in one place and appends its messages.

They never leave the run: a run ends with a `Run` (`Submitted`) or a `RunError`
(`agent/result.py`; `AwaitingApproval` as `WaitingForApproval`); a `FormatError` goes on to
the next step, an `Exhausted` to the extract step."""

from __future__ import annotations

from pydantic import BaseModel

from warmloop.agent.handoff import Handoff
from warmloop.messages import AssistantTurn, Message, ToolCall
from warmloop.outputs import submitted


class StepExit(Exception):
    """A way out of the step in progress, with the messages the run appends for it."""

    def __init__(self, *messages: Message) -> None:
        super().__init__(type(self).__name__)
        self.messages = messages


class FormatError(StepExit):
    """The model's turn did not parse: the correction to append; the run goes on."""


class Exhausted(StepExit):
    """The step loop ends without outputs (the step budget used up, an answer without a
    tool call, failed steps in a row): `reason`, and the extract prompt to append; the
    extract step asks once more. `turn`: the extract step's answer a crashed run stored."""

    def __init__(self, reason: str, *messages: Message, turn: AssistantTurn | None = None):
        super().__init__(*messages)
        self.reason = reason
        self.turn = turn


class Submitted(StepExit):
    """Valid outputs were submitted (their results are appended as they came): the run
    ends with them. `extracted`: by the extract step."""

    def __init__(self, outputs: BaseModel, *, extracted: bool) -> None:
        super().__init__()
        self.outputs = submitted(outputs)
        self.extracted = extracted


class AwaitingApproval(StepExit):
    """Calls of the step wait for a person's decision (`agent.approvals`): the run ends
    waiting, its results so far stored, these calls unanswered."""

    def __init__(self, calls: tuple[ToolCall, ...]) -> None:
        super().__init__()
        self.calls = calls


class HandedOff(StepExit):
    """A call handed the conversation to another agent (`agent.handoff`): the step's other
    calls are answered, the run ends, and the target goes on."""

    def __init__(self, handoff: Handoff, call: ToolCall) -> None:
        super().__init__()
        self.handoff = handoff
        self.call = call
