"""Fold: the paid step. A summary replaces the older part of the conversation.

The summary request is the conversation so far plus one appended request to summarise,
rendered with the same tools, so it extends the last request and its input is almost all
cache reads (never a fresh prompt). The reply's text becomes a `Summary` over the span
from the first step to the protected tail (`Transcript.fold`: nothing is removed, pairing
holds, the covered messages are hidden from renderers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.errors import ProviderError
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, ToolResult, UserText
from warmloop.providers.base import Model
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

SUMMARY_REQUEST = (
    "Context maintenance: the older part of this conversation is about to be replaced by "
    "your summary of it. Write that summary now: the task, what you did, what you found "
    "(facts, names, numbers, file paths, results you will still need) and what is left to "
    "do. Reply with the summary as plain text and call no tool."
)


@dataclass(frozen=True)
class Folded:
    """A summary the model wrote, and the usage of the request that wrote it."""

    text: str
    usage: Usage


def fold_span(transcript: Transcript, tail_start: int) -> tuple[int, int] | None:
    """The span a fold covers: from the first assistant turn (the opening system text and
    task stay) to the start of the step the protected tail starts in; None when there is
    nothing to cover. A fold hides messages from the prompt, so where `tail_start` is one
    of a step's results it ends before that step's assistant turn and never parts a call
    from its result (a prune, which keeps every call and result, need not care)."""
    start = next((i for i, m in transcript.visible() if isinstance(m, AssistantTurn)), None)
    end = tail_start
    while 0 < end < len(transcript) and isinstance(transcript[end], ToolResult):
        end -= 1  # a step's results follow its assistant turn, all together
    if start is None or start >= end:
        return None
    return start, end


def summary_text(turn: AssistantTurn) -> str:
    """The summary in a reply: its text, else its reasoning (a text-protocol model's
    thought), stripped; "" when the model gave neither."""
    return (turn.text or turn.reasoning).strip()


async def summarise(model: Model, transcript: Transcript, tools: Sequence[ToolSpec]) -> Folded:
    """Ask the model for a summary over the conversation as it stands (same prefix)."""
    request = transcript.fork()
    request.append(UserText(SUMMARY_REQUEST))
    rendered = model.render(request, tools)
    response = await model.send(rendered, session_id=transcript.conversation)
    text = summary_text(response.turn)
    if not text:
        raise ProviderError(
            f"{model.name} answered the summary request without text; the fold is skipped"
        )
    return Folded(text, response.usage)
