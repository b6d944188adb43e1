"""A loopback model API that follows the task script, for recording framework logs.

It answers three wire formats in their documented non-streaming shapes:
- OpenAI Chat Completions (`POST /v1/chat/completions`): "The chat completion object"
  (API reference, Chat Completions), tool calls in `choices[0].message.tool_calls`, usage
  with `prompt_tokens_details.cached_tokens`.
- OpenAI Responses (`POST /v1/responses`): "The response object" (API reference,
  Responses), `function_call` output items or one `message` with `output_text`, usage with
  `input_tokens_details.cached_tokens`.
- Anthropic Messages (`POST /v1/messages`): the Message object (API reference, Messages),
  `tool_use` content blocks, `stop_reason`, usage with `input_tokens`,
  `cache_creation_input_tokens` and `cache_read_input_tokens`.

Anthropic's reply also streams ("Streaming Messages"), as pydantic-ai asks for it; the other
two formats answer whole replies only (their frameworks here do not stream).

The model's side comes from `script`: tool calls until the task has its `steps` tool answers,
then the final answer (a parent offered a `delegate` tool hands it a subtask at step
`DELEGATE_AT`; a `final_answer` tool call when the request offers that tool, as
smolagents does). A request without tools gets text in the ReAct format
(`Thought:` / `Action:` / `Action Input:`, then `Final Answer:`), or the JSON blob of a
structured-chat agent when the prompt asks for an `action_input`. Usage is computed by the
truth's own rules (`truth.price`) for the wire's provider: prompt tokens are the canonical
text's characters over four, and cached tokens what that provider would have read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from benchmarks.framework_corpus.script import (
    ARGUMENT,
    DELEGATE,
    arguments_json,
    final_answer,
    progress,
    step_call,
    steps,
)
from benchmarks.framework_corpus.truth import Request, price, request_of

WIRES = {
    "/v1/chat/completions": ("chat", "openai:gpt-5"),
    "/v1/responses": ("responses", "openai:gpt-5"),
    "/v1/messages": ("anthropic", "anthropic:claude-sonnet-4-6"),
}
OUTPUT_TOKENS = 24


@dataclass
class Upstream:
    """The script's state: each task's requests so far (for the usage it reports)."""

    history: dict[str, list[Request]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        wire, spec = WIRES[path]
        tools = [_tool_name(tool) for tool in body.get("tools") or []]
        task, done = progress(json.dumps(body, ensure_ascii=False), DELEGATE in tools)
        if task is None:
            raise ValueError("a request without a [task:...] tag")
        anthropic = wire == "anthropic"
        with self.lock:
            self.count += 1
            number = self.count
            requests = self.history.setdefault(task, [])
            requests.append(request_of(0, body, anthropic))
            bill = price(spec, requests)[-1][0]
        if done < steps(task):
            tool, argument = step_call(task, done, DELEGATE in tools)
            call: tuple[str, str] | str = (tool, arguments_json(tool, argument))
        elif "final_answer" in tools:
            call = ("final_answer", json.dumps({"answer": final_answer(task)}))
        elif "submit" in tools:  # warmloop's typed commit (its default output: `answer`)
            call = ("submit", json.dumps({"answer": final_answer(task)}))
        else:
            call = final_answer(task)
        if not tools:  # a text ReAct loop: the call is written out
            blob = "action_input" in json.dumps(body)
            call = _blob_text(task, done) if blob else _react_text(task, done)
        reply = {"chat": _chat, "responses": _responses, "anthropic": _anthropic}[wire]
        return reply(number, body.get("model", "model"), call, bill)


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    return str((function or tool).get("name", ""))


def _react_text(task: str, done: int) -> str:
    if done >= steps(task):
        return f"Thought: I now know the final answer\nFinal Answer: {final_answer(task)}"
    tool, argument = step_call(task, done)
    return f"Thought: I should use {tool} next.\nAction: {tool}\nAction Input: {argument}"


def _blob_text(task: str, done: int) -> str:
    if done >= steps(task):
        action, argument = "Final Answer", final_answer(task)
    else:
        action, argument = step_call(task, done)
    blob = json.dumps({"action": action, "action_input": argument}, indent=2)
    return f"Thought: the next step.\nAction:\n```\n{blob}\n```"


def _chat(number: int, model: str, call: tuple[str, str] | str, bill: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    if isinstance(call, str):
        message["content"] = call
    else:
        message["tool_calls"] = [
            {
                "id": f"call_{number}",
                "type": "function",
                "function": {"name": call[0], "arguments": call[1]},
            }
        ]
    prompt = bill.read + bill.written + bill.uncached
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_767_258_000 + number,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "stop" if isinstance(call, str) else "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": OUTPUT_TOKENS,
            "total_tokens": prompt + OUTPUT_TOKENS,
            "prompt_tokens_details": {"cached_tokens": bill.read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
    }


def _responses(number: int, model: str, call: tuple[str, str] | str, bill: Any) -> dict[str, Any]:
    if isinstance(call, str):
        item: dict[str, Any] = {
            "type": "message",
            "id": f"msg_{number}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": call, "annotations": []}],
        }
    else:
        item = {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": f"call_{number}",
            "name": call[0],
            "arguments": call[1],
            "status": "completed",
        }
    prompt = bill.read + bill.written + bill.uncached
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1_767_258_000 + number,
        "status": "completed",
        "model": model,
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": bill.read},
            "output_tokens": OUTPUT_TOKENS,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + OUTPUT_TOKENS,
        },
    }


def _anthropic(number: int, model: str, call: tuple[str, str] | str, bill: Any) -> dict[str, Any]:
    if isinstance(call, str):
        content: list[dict[str, Any]] = [{"type": "text", "text": call}]
    else:
        content = [
            {
                "type": "tool_use",
                "id": f"toolu_{number:04d}",
                "name": call[0],
                "input": json.loads(call[1]),
            }
        ]
    return {
        "id": f"msg_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn" if isinstance(call, str) else "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": bill.uncached,
            "cache_creation_input_tokens": bill.written,
            "cache_read_input_tokens": bill.read,
            "output_tokens": OUTPUT_TOKENS,
        },
    }


def message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A Message as Anthropic streams it ("Streaming Messages": `message_start`, each content
    block's start, one delta and stop, `message_delta` with the stop reason, `message_stop`)."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": opening},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return events


def _handler(upstream: Upstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            del format, args

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            if path not in WIRES:
                self._send(404, {"error": {"message": f"no such path {path}"}})
                return
            if body.get("stream") and path != "/v1/messages":
                self._send(400, {"error": {"message": "this loopback API does not stream"}})
                return
            reply = upstream.answer(path, body)
            if not body.get("stream"):
                self._send(200, reply)
                return
            data = b"".join(
                f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                for event in message_events(reply)
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serve(upstream: Upstream) -> Iterator[str]:
    """Run `upstream` on a free loopback port; yields its base URL (no path)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


__all__ = ["ARGUMENT", "Upstream", "serve"]
