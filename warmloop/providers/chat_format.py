"""The Chat Completions wire format (OpenAI and OpenAI-compatible servers), rendered purely.

`ChatRenderer.render` is a pure function of (transcript, tools); it memoises each message's
wire form by position, so a step's work is proportional to what is new (the transcript is
append-only between rewrites, and a rewrite bumps its version, which drops the memo).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from warmloop.cache.guard import Section
from warmloop.protocols import react_text
from warmloop.providers.base import Rendered, dumps
from warmloop.providers.memo import AppendMemo, ToolsMemo
from warmloop.tools import ToolSpec
from warmloop.transcript import (
    AssistantTurn,
    JsonValue,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolResult,
    Transcript,
    UserText,
)

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


def wire_message(message: Message) -> dict[str, JsonValue]:
    """One transcript message as one Chat Completions message."""
    if isinstance(message, SystemText):
        return {"role": "system", "content": message.text}
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
        out.update(message.provider_details.get(DETAILS_KEY, {}))
        return out
    if isinstance(message, ToolResult):
        content = ERROR_PREFIX + message.content if message.is_error else message.content
        return {"role": "tool", "tool_call_id": message.call_id, "content": content}
    if isinstance(message, Notice | Summary):
        return {"role": "user", "content": react_text.piece(message)[1]}
    raise TypeError(f"unknown message kind: {message!r}")


class ChatRenderer:
    """Renders transcripts to Chat Completions payloads, memoising per message."""

    def __init__(
        self,
        model: str,
        *,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
    ) -> None:
        self.model = model
        self.text_protocol = text_protocol
        self.params = dict(params or {})
        self._memo = AppendMemo()
        self._wire: list[dict[str, JsonValue]] = []
        self._sections: list[Section] = []
        self._size = 0
        self._tools = ToolsMemo(wire_tools, dumps)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        head: dict[str, Any] = {"model": self.model, **self.params}
        request = Section("request", dumps(head))
        payload: dict[str, Any] = dict(head)
        if self.text_protocol:
            messages = [
                {"role": role, "content": text}
                for role, text in react_text.turns(transcript.messages, tools)
            ]
            sections = (
                request,
                *(Section(f"message {i}", dumps(m) + ",") for i, m in enumerate(messages)),
            )
            payload["messages"] = messages
            return Rendered(payload, sections, transcript.assistant_turns())
        fixed, size = [request], len(request.text)
        if tools:
            payload["tools"], tools_section = self._tools.get(tools)
            fixed.append(tools_section)
            size += len(tools_section.text)
        self._sync_messages(transcript)
        payload["messages"] = list(self._wire)
        sections = (*fixed, *self._sections)
        return Rendered(payload, sections, transcript.assistant_turns(), size + self._size)

    def _sync_messages(self, transcript: Transcript) -> None:
        """Bring the memo up to date with the transcript, rendering only new messages."""
        start, new = self._memo.sync(transcript)
        if not start:
            self._wire, self._sections, self._size = [], [], 0
        for message in new:
            wire = wire_message(message)
            text = dumps(wire) + ","
            self._wire.append(wire)
            self._sections.append(Section(f"message {len(self._sections)}", text))
            self._size += len(text)
