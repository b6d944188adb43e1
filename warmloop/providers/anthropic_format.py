"""The Anthropic Messages wire format, rendered purely and memoised per message.

Leading system texts become `system` blocks; everything after is `messages` with strict
user/assistant alternation. Tool results, notices and follow-up texts appended after one
assistant turn are merged, in order, into one user turn: merging only joins pieces appended
since the last assistant turn, so every earlier wire turn stays byte-identical (I1).
Assistant turns that came from Anthropic are echoed from their raw content blocks (thinking
signatures, redacted thinking and tool_use inputs exactly as received).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from warmloop.cache.wire import ANTHROPIC, Canonicalizer
from warmloop.messages import (
    AssistantTurn,
    JsonValue,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolResult,
    UserText,
)
from warmloop.protocols.inline import inline_text
from warmloop.providers.anthropic_cache import place_breakpoints
from warmloop.providers.base import Rendered
from warmloop.providers.memo import AppendMemo, ToolsMemo
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

DETAILS_KEY = "anthropic"
"""`AssistantTurn.provider_details[DETAILS_KEY]["content"]` holds the raw response blocks."""
EMPTY_TURN = "(no content)"
"""Stands in for an assistant turn with no blocks: the API rejects empty assistant content."""

Block = dict[str, JsonValue]
WireMessage = dict[str, Any]


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


TOOL_SEARCH: Block = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
"""Anthropic's server-side tool search, sent first whenever a tool is deferred
(Tool use > Tool search tool: `defer_loading: true` tools stay out of the context until a
search returns a `tool_reference` to them)."""


def wire_tools(tools: Sequence[ToolSpec]) -> list[Block]:
    blocks: list[Block] = [TOOL_SEARCH] if any(t.defer_loading for t in tools) else []
    for t in tools:
        block: Block = {"name": t.name, "description": t.description, "input_schema": t.parameters}
        if t.defer_loading:
            block["defer_loading"] = True
        blocks.append(block)
    return blocks


def tool_input(arguments: str) -> dict[str, JsonValue]:
    """`input` for a tool_use rendered from a turn another provider produced.

    The API requires an object; a raw string that is not one is kept, visibly, under
    `raw_arguments` so the model sees what it sent (its tool result says what was wrong).
    """
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        value = None
    return value if isinstance(value, dict) else {"raw_arguments": arguments}


def assistant_blocks(turn: AssistantTurn) -> list[Block]:
    """An assistant turn's content: the raw response blocks when Anthropic produced it."""
    details = turn.provider_details.get(DETAILS_KEY)
    if isinstance(details, Mapping) and isinstance(details.get("content"), list):
        # Deep copy: the payload must never alias (and let an SDK mutate) transcript data.
        blocks: list[Block] = copy.deepcopy(details["content"])
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        if len(uses) == len(turn.tool_calls):
            # The turn's ids, matched in order: a repeated id was renamed, and the
            # tool_result blocks carry the new one.
            for block, call in zip(uses, turn.tool_calls, strict=True):
                block["id"] = call.id
    else:
        # A turn from another provider: its reasoning has no Anthropic signature, and an
        # unsigned thinking block is rejected, so only text and tool calls carry over.
        blocks = [text_block(turn.text)] if turn.text else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(c.arguments)}
            for c in turn.tool_calls
        ]
    return blocks or [text_block(EMPTY_TURN)]


def wire_piece(message: Message) -> tuple[str, list[Block]]:
    """One transcript message (after the leading system texts) as (role, content blocks)."""
    if isinstance(message, AssistantTurn):
        return "assistant", assistant_blocks(message)
    if isinstance(message, ToolResult):
        block: Block = {
            "type": "tool_result",
            "tool_use_id": message.call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    if isinstance(message, UserText):
        return "user", [text_block(message.text)]
    if isinstance(message, Notice | SystemText | Summary):
        # Rendered in place, never hoisted into `system` (that would move the whole prefix).
        return "user", [text_block(inline_text(message))]
    raise TypeError(f"unknown message kind: {message!r}")


class AnthropicRenderer:
    """Renders transcripts to Messages API payloads, memoising each wire message."""

    def __init__(self, head: Mapping[str, JsonValue], control: Mapping[str, JsonValue]) -> None:
        self.head = dict(head)
        self.control = dict(control)
        self._memo = AppendMemo()
        self._system: list[Block] = []
        self._wire: list[WireMessage] = []
        self._tools = ToolsMemo(wire_tools)
        self._canon = Canonicalizer(ANTHROPIC)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the payload with its breakpoints placed (the stream leaves them out)."""
        self._sync_messages(transcript)
        payload: dict[str, Any] = dict(self.head)
        if tools:
            payload["tools"] = self._tools.get(tools)
        if self._system:
            payload["system"] = list(self._system)
        payload["messages"] = list(self._wire)
        marked = place_breakpoints(payload, self.control)
        return Rendered(marked, self._canon.stream, transcript.assistant_turns())

    def _sync_messages(self, transcript: Transcript) -> None:
        start, new = self._memo.sync(transcript)
        if not start:
            self._system, self._wire = [], []
        for message in new:
            if isinstance(message, SystemText) and not self._wire:
                # A new list: payloads already handed out keep the system they were sent.
                self._system = [*self._system, text_block(message.text)]
                continue
            role, blocks = wire_piece(message)
            if self._wire and self._wire[-1]["role"] == role:
                # A new dict: payloads already handed out keep the message they were given.
                self._wire[-1] = {"role": role, "content": [*self._wire[-1]["content"], *blocks]}
            else:
                self._wire.append({"role": role, "content": blocks})
