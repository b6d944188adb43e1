"""A streamed Chat Completions reply read back into the body a non-streamed request gets,
so `chat_format.parse_reply` reads both alike (usage included).

"The chat completion chunk object"
(https://platform.openai.com/docs/api-reference/chat-streaming): each chunk's
`choices[].delta` holds the next piece of the message (`content`, reasoning fields, and
`tool_calls` by `index`, the id, type and name in a call's first piece); one chunk carries
the `finish_reason`; with `stream_options.include_usage`
(https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options) a
last chunk with empty `choices` carries the whole request's `usage`. A host that sends no
usage chunk is read as a reply without usage is: its `timings` (llama.cpp server) when it
sends them, else no tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable
from typing import Any

from warmloop.providers.deltas import Delta, TextDelta, ToolCallDelta
from warmloop.providers.streamed import cut_short

CALL_KEYS = ("id", "type")
"""A tool call's own fields, set by its first piece."""


class ChatStream:
    """The pieces of one streamed completion, put together as they come."""

    def __init__(self, deltas: Callable[[Delta], None]) -> None:
        self.deltas = deltas
        self.head: dict[str, Any] = {}
        self.text: list[str] = []
        self.fields: dict[str, Any] = {}
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None

    def chunk(self, raw: dict[str, Any]) -> None:
        """Take one chunk (its JSON)."""
        for key, value in raw.items():
            if key != "choices" and value is not None:
                self.head[key] = value  # id, model, created; usage and timings at the end
        for choice in raw.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self.choice(choice)

    def choice(self, choice: dict[str, Any]) -> None:
        if isinstance(choice.get("finish_reason"), str):
            self.finish = choice["finish_reason"]
        delta = choice.get("delta")
        for key, value in (delta if isinstance(delta, dict) else {}).items():
            if key == "content" and isinstance(value, str) and value:
                self.text.append(value)
                self.deltas(TextDelta(value))
            elif key == "tool_calls" and isinstance(value, list):
                for piece in value:
                    if isinstance(piece, dict):
                        self.call(piece)
            elif key not in ("role", "content") and value is not None:
                self.field(key, value)

    def field(self, key: str, value: Any) -> None:
        """Another message field (reasoning): text and lists go on, anything else is set."""
        known: Any = self.fields.get(key)
        grows = isinstance(value, (str, list)) and type(known) is type(value)
        self.fields[key] = known + value if grows else value

    def call(self, piece: dict[str, Any]) -> None:
        index = piece.get("index", 0)
        if not isinstance(index, int):
            return
        made = self.calls.get(index)
        function = piece["function"] if isinstance(piece.get("function"), dict) else {}
        name = str(function.get("name") or "")
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else ""
        if made is None:
            made = {key: piece[key] for key in CALL_KEYS if key in piece}
            made["function"] = {"name": name, "arguments": arguments}
            self.calls[index] = made
            call_id = str(piece.get("id") or "")
            self.deltas(ToolCallDelta(len(self.calls) - 1, name, call_id, arguments))
        elif arguments:
            made["function"]["arguments"] += arguments
            place = list(self.calls).index(index)
            self.deltas(ToolCallDelta(place, arguments=arguments))

    def body(self, name: str) -> dict[str, Any]:
        """The completion as a non-streamed request gets it; a stream that never said how
        it finished was cut short."""
        if self.finish is None:
            raise cut_short(name, "finish_reason")
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        message |= self.fields
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        choice = {"index": 0, "message": message, "finish_reason": self.finish}
        return {**self.head, "object": "chat.completion", "choices": [choice]}


async def streamed_body(
    chunks: AsyncIterable[Any], deltas: Callable[[Delta], None], name: str
) -> dict[str, Any]:
    """Read the SDK's chunks, each piece to `deltas`; the whole completion's body."""
    stream = ChatStream(deltas)
    async for chunk in chunks:
        stream.chunk(chunk.to_dict(mode="json"))
    return stream.body(name)
