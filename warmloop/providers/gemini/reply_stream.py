"""A streamed Gemini reply (`models.streamGenerateContent`, `alt=sse`:
https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent) put back
together as the one `GenerateContentResponse` a non-streamed request gets, so
`gemini_format.parse_reply` reads both alike.

Each chunk is a GenerateContentResponse holding the next parts; a run of text parts of one
kind (thought or not) is one part again (its thought signature, when one came, kept), a
function call comes whole. The last chunk carries the `finishReason` and the
`usageMetadata` (cached tokens included); a stream that never sends usage is read as a reply
without usage is (no tokens), one that never finishes was cut short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from google.genai import types

from warmloop.providers.deltas import Delta, TextDelta, ToolCallDelta
from warmloop.providers.streamed import cut_short
from warmloop.wire.stream import dumps


async def streamed_reply(
    first: types.GenerateContentResponse | None,
    rest: AsyncIterator[types.GenerateContentResponse],
    deltas: Callable[[Delta], None],
    name: str,
) -> types.GenerateContentResponse:
    """The whole reply from its chunks (`first`, then `rest`), each text and each call to
    `deltas` as it comes."""
    parts: list[types.Part] = []
    last: types.GenerateContentResponse | None = None
    finished = False
    usage: types.GenerateContentResponseUsageMetadata | None = None
    calls = 0
    chunk = first
    while chunk is not None:
        last = chunk
        usage = chunk.usage_metadata or usage
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is not None:
            finished = finished or candidate.finish_reason is not None
            for part in (candidate.content.parts if candidate.content else None) or []:
                if part.function_call is not None:
                    call = part.function_call
                    arguments = dumps(call.args or {})
                    deltas(ToolCallDelta(calls, call.name or "", call.id or "", arguments))
                    calls += 1
                elif part.text is not None and not part.thought:
                    deltas(TextDelta(part.text))
                joined(parts, part)
        chunk = await anext(rest, None)
    if last is None or not finished:
        raise cut_short(name, "finishReason")
    if last.candidates:  # a blocked prompt has none: parse_reply says so
        content = types.Content(role="model", parts=parts)
        candidate = last.candidates[0].model_copy(update={"content": content})
        last = last.model_copy(update={"candidates": [candidate]})
    return last.model_copy(update={"usage_metadata": usage})


def joined(parts: list[types.Part], part: types.Part) -> None:
    """Add `part`, joining it to the text part before it when both are text of one kind."""
    before = parts[-1] if parts else None
    if (
        before is not None
        and part.text is not None
        and before.text is not None
        and bool(part.thought) == bool(before.thought)
        and before.thought_signature is None
        and part.function_call is None
    ):
        signature = part.thought_signature
        parts[-1] = before.model_copy(
            update={"text": before.text + part.text, "thought_signature": signature}
        )
        return
    parts.append(part)
