"""What every bad-input case must show, whatever went in.

`exercise` runs an agent under a liveness guard and returns how it ended; `check_outcome`
asserts the suite's promises: a clear `WarmloopError` (or a finished run), no other
exception (a traceback), no hang, the transcript intact (pairing holds, it saves and loads
back byte for byte), no turn duplicated or lost (one assistant turn per answered request),
and no secret in any message or saved file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from warmloop import (
    Agent,
    AssistantTurn,
    RunError,
    ScriptedModel,
    ToolResult,
    Transcript,
    WarmloopError,
    check_pairing,
)
from warmloop.agent.result import Run

SECRET = "sk-bad-input-SECRET-7c1f3e9a"
"""Every API key in the suite: no message, error or saved file may ever contain it."""
KEY_VARIABLES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
)
LIVENESS_SECONDS = 60.0
"""A guard against hangs, far above what any case needs: not a timing assertion."""


@dataclass
class Outcome:
    """How a run ended: its result or its error, and the transcript it left (if any)."""

    run: Run | None = None
    error: WarmloopError | None = None
    transcript: Transcript | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def results(self) -> list[ToolResult]:
        messages = self.transcript.messages if self.transcript is not None else ()
        return [m for m in messages if isinstance(m, ToolResult)]

    def tool_errors(self) -> list[str]:
        return [r.content for r in self.results if r.is_error]


async def exercise(agent: Agent, task: Any = "Do the task.", **options: Any) -> Outcome:
    """Run `agent` once; a WarmloopError is an outcome, anything else fails the case."""
    try:
        run = await asyncio.wait_for(agent.run(task, **options), LIVENESS_SECONDS)
    except WarmloopError as exc:
        transcript = exc.transcript if isinstance(exc, RunError) else None
        return Outcome(error=exc, transcript=transcript)
    return Outcome(run=run, transcript=run.transcript)


def answered_requests(model: object) -> int | None:
    """How many requests a model answered, where it keeps count (scripted models)."""
    return len(model.requests) if isinstance(model, ScriptedModel) else None


def check_outcome(
    outcome: Outcome, *, model: object = None, history_turns: int = 0, answered: int | None = None
) -> None:
    """The promises of every case (see the module docstring)."""
    if outcome.error is not None:
        message = str(outcome.error)
        assert message.strip(), "an error must say what went wrong"
        assert SECRET not in message
        assert "Traceback" not in message
    transcript = outcome.transcript
    if transcript is None:
        return
    check_pairing(transcript.messages)
    saved = transcript.dump()
    assert SECRET not in saved
    saved.encode("utf-8")  # strict: every text in a transcript is encodable
    assert Transcript.load(saved) == transcript
    assert Transcript.load(saved).dump() == saved
    turns = sum(isinstance(m, AssistantTurn) for m in transcript) - history_turns
    expected = answered if answered is not None else answered_requests(model)
    if expected is not None:
        assert turns == expected, f"{turns} assistant turns for {expected} answered requests"


def expect(outcome: Outcome, expected: str) -> None:
    """`ok` (outputs), `tool:<text>` (a tool error the model saw, run finished or not),
    `<ErrorClass>:<text>` (that WarmloopError, its message holding the text)."""
    kind, _, text = expected.partition(":")
    if kind == "ok":
        assert outcome.error is None, str(outcome.error)
        assert outcome.run is not None
        return
    if kind == "tool":
        errors = outcome.tool_errors()
        assert any(text in e for e in errors), f"no tool error with {text!r} in {errors!r}"
        return
    assert outcome.error is not None, f"expected {kind}, the run finished"
    assert type(outcome.error).__name__ == kind, f"{type(outcome.error).__name__}: {outcome.error}"
    assert text in str(outcome.error), str(outcome.error)


Build = Callable[[], Any]
