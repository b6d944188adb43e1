"""Forks at a chosen step: a new branch of a conversation that keeps its messages up to the
end of one step of a run (its turn and every result), its routing key and revision, and
names its parent (I6: a new id). A run on it (`history=`) sends first what the parent's
request after that step sent, plus its own task, so it reads the parent's cached prefix;
forked children of a fan-out (`fork=True`) all start where the calling run stood before
the turn that started them.

A fork before the parent's last step starts a fresh prefix guard: the parent's guard stands
at its last request, which the fork's first request does not extend.
"""

from __future__ import annotations

from dataclasses import replace

from warmloop.errors import ConfigurationError
from warmloop.messages import AssistantTurn
from warmloop.transcript import Transcript


def step_end(transcript: Transcript, step: int, start: int = 0) -> int:
    """Where step `step` of the run that began at `start` ends: before the turn of step
    `step + 1` (step 0: before the run's first turn), or the transcript's end."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ConfigurationError(f"step must be an integer >= 0, got {step!r}")
    turns = [i for i in range(start, len(transcript)) if isinstance(transcript[i], AssistantTurn)]
    if step > len(turns):
        raise ConfigurationError(
            f"the run has {len(turns)} steps; fork at a step from 0 to {len(turns)}"
        )
    return turns[step] if step < len(turns) else len(transcript)


def fork_at(transcript: Transcript, step: int | None = None, *, start: int = 0) -> Transcript:
    """A new branch of `transcript` ending with step `step` of the run that began at
    `start` (None: every message, `Transcript.fork`). It ends before a turn, so every
    call in it has its result."""
    if step is None:
        return transcript.fork()
    end = step_end(transcript, step, start)
    if end == len(transcript):
        return transcript.fork()
    return Transcript(
        transcript.messages[:end],
        conversation=transcript.conversation,
        revision=transcript.revision,
        meta=replace(transcript.meta, parent=transcript.id),
    )


def before_current_turn(transcript: Transcript) -> Transcript:
    """A fork of a run in the middle of acting on a turn: every message before that turn
    (what the request that asked for it sent)."""
    turns = [i for i in range(len(transcript)) if isinstance(transcript[i], AssistantTurn)]
    if not turns:
        return transcript.fork()
    return Transcript(
        transcript.messages[: turns[-1]],
        conversation=transcript.conversation,
        revision=transcript.revision,
        meta=replace(transcript.meta, parent=transcript.id),
    )
