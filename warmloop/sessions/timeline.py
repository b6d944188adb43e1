"""What a stored session's request times say about its pauses: how long each tool call
kept the conversation waiting, and the gaps between the requests of a step, read from the
`sent_at` the store recorded for each request. The agent learns them (`Learned.stored`)
when a run starts on the session, so its keep-alive rule has a history from the first
pause of a new process on.

Two consecutive requests belong to one step when only the results of the first's tool
calls (and notices) stand between their turns: the gap from the first request to the
next is then the pause of the first call's tool (`tool:<name>`, measured on the cache's
clock from the request, as a live run measures it). A user turn between them (a new run's
task, a correction, an extract request), a rewrite's summary, or a call a stopped process
left "interrupted" is no such pause, and is not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from warmloop.messages import AnnouncedTool, AssistantTurn, Message, Notice, ToolResult
from warmloop.sessions.records import StoredRequest
from warmloop.tools.gateway import SUBMIT
from warmloop.transcript import Transcript


@dataclass(frozen=True)
class StoredPauses:
    """A stored session's pauses, oldest first: (kind, seconds) of each tool pause, and
    the seconds between the requests of each step."""

    pauses: tuple[tuple[str, float], ...] = ()
    gaps: tuple[float, ...] = ()


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
    return StoredPauses(tuple(pauses), tuple(gaps))


def _tool_side(message: Message, interrupted: str) -> bool:
    if isinstance(message, ToolResult):
        return not (interrupted and message.content == interrupted)
    return isinstance(message, AnnouncedTool | Notice)
