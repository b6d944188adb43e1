"""Where a stored run stands: read from its messages, so a run a crash cut short can go on
from its last stored step (a fleet worker recovering another's run) instead of starting again.

The stored session is the durable record: an assistant turn is stored before any of its
tools runs, a correction together with the unparseable turn it answers, and each tool result
as it comes. So the messages of the run say how many steps it took, which of them failed,
whether it was extracting, and which calls of its newest turn never returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.messages import AssistantTurn, Message, ToolResult, UserText


@dataclass(frozen=True)
class Position:
    """A run's counters at its last stored message, and the step left unfinished."""

    steps: int
    """Requests of the run's step loop (the extract step's own request not counted)."""
    syntax_errors: int
    """Unparseable turns in a row at the end."""
    failed_steps: int
    """Steps in a row, before the newest turn, whose every call failed."""
    turn: AssistantTurn | None
    """The newest turn of the step loop when its step may be unfinished (calls without a
    result, or no follow-up yet); None after an unparseable turn or before the first."""
    extract_prompt: bool
    """The extract step began: its prompt is stored."""
    extract_turn: AssistantTurn | None
    """The extract step's answer, when it is stored."""


def position(run: Sequence[Message], submit: str) -> Position:
    """Where the run whose messages (from its task on) are `run` stands."""
    steps = syntax_errors = failed_steps = 0
    turn: AssistantTurn | None = None
    extracting = False
    extract_turn: AssistantTurn | None = None
    for index, message in enumerate(run):
        if isinstance(message, UserText) and message.only_tool == submit:
            extracting = True
            failed_steps = _failed(turn, run, failed_steps)
            turn = None
        elif isinstance(message, AssistantTurn):
            if extracting:
                extract_turn = message
                continue
            failed_steps = _failed(turn, run, failed_steps)
            steps += 1
            follow = run[index + 1] if index + 1 < len(run) else None
            unparsed = isinstance(follow, UserText) and not follow.only_tool
            syntax_errors = syntax_errors + 1 if unparsed else 0
            turn = None if unparsed else message
    return Position(steps, syntax_errors, failed_steps, turn, extracting, extract_turn)


def _failed(turn: AssistantTurn | None, run: Sequence[Message], before: int) -> int:
    """The failed-step count after `turn`'s step (every result an error: one more)."""
    if turn is None or not turn.tool_calls:
        return before
    ids = {call.id for call in turn.tool_calls}
    results = [m for m in run if isinstance(m, ToolResult) and m.call_id in ids]
    return before + 1 if results and all(r.is_error for r in results) else 0


def stored_results(messages: Sequence[Message]) -> dict[str, ToolResult]:
    """The results stored after the newest assistant turn (a resumed step's), by call id."""
    found: dict[str, ToolResult] = {}
    for message in reversed(messages):
        if isinstance(message, AssistantTurn):
            break
        if isinstance(message, ToolResult):
            found[message.call_id] = message
    return found
