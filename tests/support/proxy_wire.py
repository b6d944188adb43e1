"""What the `warmloop proxy` tests send and answer: each wire's request through its official
SDK (system prompt, tools, a tool call and its result, sampling parameters), an upstream
handler that keeps what it received (path, headers, body) and answers each wire in its
documented shape, streamed or not, and the model-visible part of a received body.

Wire shapes: Anthropic "Messages > Streaming" (message_start ... message_stop events), OpenAI
"Chat Completions > Streaming" (`chat.completion.chunk` data lines, then `[DONE]`),
"Responses > Streaming" (`response.completed` carrying the response object), Gemini
`streamGenerateContent?alt=sse` (one GenerateContentResponse per data line); non-streamed
answers are `wire_servers`' scripted ones.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai
from google import genai
from google.genai import types

from tests.support.fake_servers import ToolUse
from tests.support.wire_servers import _wire_reply

WIRES = ("anthropic", "chat", "responses", "gemini")
ARGS = {"path": "a"}
RESULT = {"content": "é"}
TOOL_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}


@dataclass
class Captured:
    """An upstream handler that keeps every request it answers."""

    seen: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        path = request.url.path
        with self.lock:
            self.seen.append((path, dict(request.headers), body))
            n = len(self.seen)
        if body.get("stream") or "streamGenerateContent" in path:
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=_events(path)
            )
        return httpx2.Response(200, json=_wire_reply(path, body, ToolUse("read", {"path": "a"}), n))

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [body for _, _, body in self.seen]


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    lines = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        lines.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(lines).encode()


def _events(path: str) -> bytes:
    if path.endswith("/messages"):
        start: dict[str, Any] = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        return _sse(
            [
                ("message_start", {"type": "message_start", "message": start}),
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": "hi"},
                    },
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": 2},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )
    if path.endswith("/chat/completions"):
        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-5"}
        first = {"index": 0, "delta": {"role": "assistant", "content": "hi"}}
        usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
        return _sse(
            [
                (None, {**chunk, "choices": [{**first, "finish_reason": None}]}),
                (
                    None,
                    {
                        **chunk,
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                        "usage": usage,
                    },
                ),
                (None, "[DONE]"),
            ]
        )
    if path.endswith("/responses"):
        text = {"type": "output_text", "text": "hi", "annotations": []}
        message = {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [text],
        }
        response = {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": "gpt-5",
            "output": [message],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 1,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 11,
            },
        }
        done = {"type": "response.completed", "sequence_number": 0, "response": response}
        return _sse([("response.completed", done)])
    part = {"content": {"role": "model", "parts": [{"text": "hi"}]}, "index": 0}
    reply = {
        "candidates": [{**part, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
    }
    return _sse([(None, reply)])


def send(wire: str, base: str, *, stream: bool, task: str = "Read a.txt") -> None:
    """One request in `wire` through its official SDK at `base`, read to its end."""
    if wire == "anthropic":
        client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
        tools: Any = [{"name": "read", "description": "Read a file", "input_schema": TOOL_SCHEMA}]
        messages: Any = [
            {"role": "user", "content": task},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": ARGS}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", **RESULT}]},
        ]
        made = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            stop_sequences=["END"],
            system="You are terse.",
            tools=tools,
            messages=messages,
            stream=stream,
        )
        if stream:
            list(made)
    elif wire in ("chat", "responses"):
        oai = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
        function: Any = {"name": "read", "description": "Read a file", "parameters": TOOL_SCHEMA}
        if wire == "chat":
            call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            chat: Any = [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": task},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "é"},
            ]
            done: Any = oai.chat.completions.create(
                model="gpt-5",
                messages=chat,
                tools=[{"type": "function", "function": function}],
                temperature=0.2,
                max_completion_tokens=50,
                stream=stream,
            )
        else:
            items: Any = [
                {"role": "user", "content": task},
                {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "é"},
            ]
            tool: Any = {"type": "function", **function}
            done = oai.responses.create(
                model="gpt-5",
                instructions="You are terse.",
                input=items,
                tools=[tool],
                max_output_tokens=64,
                stream=stream,
            )
        if stream:
            list(done)
    else:
        gem = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=base))
        config = types.GenerateContentConfig(
            system_instruction="You are terse.",
            temperature=0.1,
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name="read",
                            description="Read a file",
                            parameters_json_schema=TOOL_SCHEMA,
                        )
                    ]
                )
            ],
        )
        contents: Any = [
            {"role": "user", "parts": [{"text": task}]},
            {"role": "model", "parts": [{"function_call": {"name": "read", "args": ARGS}}]},
            {
                "role": "user",
                "parts": [{"function_response": {"name": "read", "response": {"text": "é"}}}],
            },
        ]
        model = "gemini-2.5-flash"
        if stream:
            list(gem.models.generate_content_stream(model=model, contents=contents, config=config))
        else:
            gem.models.generate_content(model=model, contents=contents, config=config)


ADDED_FIELDS = frozenset({"cache_control", "prompt_cache_key"})
"""What the proxy may add to a body: cache markers and the routing key, nothing the model
reads."""


def model_visible(body: Any, *, blocks: bool = False) -> Any:
    """A received body less what the proxy may add; with `blocks` (Messages), a string
    `system` or message content as the one text block it stands for ("Create a Message":
    a string is shorthand for one text block)."""
    if isinstance(body, dict):
        out = {k: model_visible(v, blocks=blocks) for k, v in body.items() if k not in ADDED_FIELDS}
        if blocks and isinstance(out.get("system"), str):
            out["system"] = [{"type": "text", "text": out["system"]}]
        if blocks and "role" in out and isinstance(out.get("content"), str):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(body, list):
        return [model_visible(v, blocks=blocks) for v in body]
    return body
