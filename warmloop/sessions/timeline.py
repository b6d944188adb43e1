"""What a stored session's request times say about its pauses: how long each tool call
kept the conversation waiting, the gaps between the requests of a step, and its runs (how
many requests each sent, and how long after each the next run began), read from the
`sent_at` the store recorded for each request. The agent learns them (`Learned.stored`)
when a run starts on the session, so its keep-alive rule has a history from the first
pause of a new process on.

Two consecutive requests belong to one step when only the results of the first's tool
calls (and notices) stand between their turns: the gap from the first request to the
next is then the pause of the first call's tool (`tool:<name>`, measured on the cache's
clock from the request, as a live run measures it). A user turn between them (a new run's
task, a correction, an extract request), a rewrite's summary, or a call a stopped process
left "interrupted" is no such pause, and is not read.

A run begins with its task: a user turn (not an extract request) that does not answer an
assistant turn. A correction answers the unparseable turn just before it; a task follows
the instructions, the previous run's last result, or a notice.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from warmloop.messages import (
    AnnouncedTool,
    AssistantTurn,
    Message,
    Notice,
    ToolResult,
    UserText,
)
from warmloop.sessions.ledger import StoredRequest
from warmloop.tools.gateway import SUBMIT
from warmloop.transcript import Transcript


@dataclass(frozen=True)
class StoredRun:
    """One run of a stored session: the requests it sent, whether it was the session's
    first, and the seconds from its last request to the next run's first (None: no run
    came after it, or a request's time is missing)."""

    requests: int
    first: bool
    follow_up: float | None = None


@dataclass(frozen=True)
class StoredPauses:
    """A stored session's pauses, oldest first: (kind, seconds) of each tool pause, the
    seconds between the requests of each step, and its runs."""

    pauses: tuple[tuple[str, float], ...] = ()
    gaps: tuple[float, ...] = ()
    runs: tuple[StoredRun, ...] = ()


def stored_pauses(
    transcript: Transcript, requests: Sequence[StoredRequest], *, interrupted: str = ""
) -> StoredPauses:
    """The pauses `requests` (in order, with their turns' positions in `transcript`) show;
    `interrupted`: the result a stopped process's unanswered call was given."""
    messages = transcript.messages
    pauses: list[tuple[str, float]] = []
    gaps: list[float] = []
    for first, second in pairwise(requests):
        seconds = second.sent_at - first.sent_at
        if first.sent_at <= 0 or seconds < 0:
            continue  # a request stored without its time
        if not 0 <= first.position < second.position <= len(messages):
            continue
        turn = messages[first.position]
        between = messages[first.position + 1 : second.position]
        if (
            not isinstance(turn, AssistantTurn)
            or not between
            or not all(_tool_side(m, interrupted) for m in between)
        ):
            continue
        gaps.append(seconds)
        slow = next((c.name for c in turn.tool_calls if c.name != SUBMIT), None)
        if slow is not None:
            pauses.append((f"tool:{slow}", seconds))
    return StoredPauses(tuple(pauses), tuple(gaps), stored_runs(messages, requests))


def stored_runs(
    messages: Sequence[Message], requests: Sequence[StoredRequest]
) -> tuple[StoredRun, ...]:
    """The runs `requests` (at their turns' positions in `messages`) fall into."""
    starts = [i for i in range(len(messages)) if is_task(messages, i)]
    runs: list[list[StoredRequest]] = [[] for _ in starts]
    for request in requests:
        run = bisect_right(starts, request.position) - 1
        if run >= 0:
            runs[run].append(request)
    found: list[StoredRun] = []
    for number, own in enumerate(runs):
        after = runs[number + 1] if number + 1 < len(runs) else []
        gap = None
        if own and after and own[-1].sent_at > 0 and after[0].sent_at >= own[-1].sent_at:
            gap = after[0].sent_at - own[-1].sent_at
        if own:  # a run that sent nothing (stopped before its first request) is skipped
            found.append(StoredRun(len(own), not found, gap))
    return tuple(found)


def is_task(messages: Sequence[Message], index: int) -> bool:
    """Whether the message at `index` is a run's task (see the module docstring)."""
    message = messages[index]
    if not isinstance(message, UserText) or message.only_tool:
        return False
    earlier = (messages[i] for i in range(index - 1, -1, -1))
    before = next((m for m in earlier if not isinstance(m, AnnouncedTool | Notice)), None)
    return not isinstance(before, AssistantTurn)


def _tool_side(message: Message, interrupted: str) -> bool:
    if isinstance(message, ToolResult):
        return not (interrupted and message.content == interrupted)
    return isinstance(message, AnnouncedTool | Notice)
