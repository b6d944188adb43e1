"""The Chat Completions wire format (OpenAI and OpenAI-compatible servers), rendered purely.

`ChatRenderer.render` is a pure function of (transcript, tools); it memoises each message's
wire form by position, so a step's work is proportional to what is new (the transcript is
append-only between rewrites, and a rewrite bumps its revision, which drops the memo).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from warmloop.cache.wire import CHAT, Canonicalizer
from warmloop.messages import (
    AssistantTurn,
    JsonValue,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.protocols import react_text
from warmloop.protocols.inline import inline_text
from warmloop.providers.base import Rendered
from warmloop.providers.memo import AppendMemo, ToolsMemo
from warmloop.providers.openai_cache import marked_text
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

ERROR_PREFIX = "ERROR: "
DETAILS_KEY = "chat"
"""`AssistantTurn.provider_details[DETAILS_KEY]` holds extra assistant fields to echo back
(e.g. DeepSeek's `reasoning_content`)."""


def wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, JsonValue]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def echoed_calls(raw: list[JsonValue], calls: Sequence[ToolCall]) -> list[JsonValue]:
    """The host's raw tool calls with the turn's ids, so a renamed call and its result pair
    on the wire; unchanged (same bytes) where no id was renamed."""
    if len(raw) != len(calls):
        return raw  # not this turn's calls (a hand-made transcript): nothing to match
    return [
        {**item, "id": call.id} if isinstance(item, dict) and item.get("id") != call.id else item
        for item, call in zip(raw, calls, strict=True)
    ]


def wire_message(
    message: Message, *, opening: bool = False, breakpoint: bool = False
) -> dict[str, JsonValue]:
    """One transcript message as one Chat Completions message (the opening system text
    as the system message, a text block with an explicit cache breakpoint if `breakpoint`;
    later system text, notices and summaries as user text)."""
    if isinstance(message, SystemText) and opening:
        content = marked_text(message.text, "text") if breakpoint else message.text
        return {"role": "system", "content": content}
    if isinstance(message, UserText):
        return {"role": "user", "content": message.text}
    if isinstance(message, AssistantTurn):
        out: dict[str, JsonValue] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ]
        details = message.provider_details.get(DETAILS_KEY, {})
        out.update(details)
        if isinstance(details, dict) and isinstance(details.get("tool_calls"), list):
            out["tool_calls"] = echoed_calls(details["tool_calls"], message.tool_calls)
        return out
    if isinstance(message, ToolResult):
        content = ERROR_PREFIX + message.content if message.is_error else message.content
        return {"role": "tool", "tool_call_id": message.call_id, "content": content}
    if isinstance(message, Notice | Summary | SystemText):
        return {"role": "user", "content": inline_text(message)}
    raise TypeError(f"unknown message kind: {message!r}")


class ChatRenderer:
    """Renders transcripts to Chat Completions payloads, memoising per message."""

    def __init__(
        self,
        model: str,
        *,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        breakpoint: bool = False,
    ) -> None:
        self.model = model
        self.text_protocol = text_protocol
        self.breakpoint = breakpoint
        self.params = dict(params or {})
        self._memo = AppendMemo()
        self._wire: list[dict[str, JsonValue]] = []
        self._tools = ToolsMemo(wire_tools)
        self._canon = Canonicalizer(CHAT)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        payload: dict[str, Any] = {"model": self.model, **self.params}
        if self.text_protocol:
            payload["messages"] = [
                {"role": role, "content": text}
                for role, text in react_text.turns(transcript.visible_messages(), tools)
            ]
            return Rendered(payload, self._canon.stream, transcript.assistant_turns())
        if tools:
            payload["tools"] = self._tools.get(tools)
        start, new = self._memo.sync(transcript)
        if not start:
            self._wire = []
        self._wire.extend(
            wire_message(m, opening=not self._wire, breakpoint=self.breakpoint) for m in new
        )
        payload["messages"] = list(self._wire)
        return Rendered(payload, self._canon.stream, transcript.assistant_turns())
