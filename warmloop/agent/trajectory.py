"""A trajectory view of a transcript: per tool call, the thought, the call and what came back.

Derived for debugging and for code that expects a trajectory; never stored and never the
run's state (the transcript is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.messages import AssistantTurn, Message, ToolResult


@dataclass(frozen=True)
class TrajectoryStep:
    """One tool call of one assistant turn (`step` counts assistant turns from 1)."""

    step: int
    thought: str
    tool: str
    arguments: str
    observation: str
    is_error: bool


def trajectory(messages: Sequence[Message]) -> list[TrajectoryStep]:
    """The tool calls of `messages` in order, each with its turn's thought and its result
    (a call without a result yet has an empty observation)."""
    results = {m.call_id: m for m in messages if isinstance(m, ToolResult)}
    steps: list[TrajectoryStep] = []
    turn = 0
    for message in messages:
        if not isinstance(message, AssistantTurn):
            continue
        turn += 1
        thought = message.reasoning or message.text
        for call in message.tool_calls:
            result = results.get(call.id)
            steps.append(
                TrajectoryStep(
                    turn,
                    thought,
                    call.name,
                    call.arguments,
                    result.content if result is not None else "",
                    result.is_error if result is not None else False,
                )
            )
    return steps
