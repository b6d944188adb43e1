"""Scripted HTTP servers on loopback for tests that run the real `warmloop` executable or
the README's examples: a Chat Completions server and an Anthropic Messages server. Each
answers request n with reply n of its script: a tool call, or an HTTP error status.

Response shapes follow the providers' API references: Chat Completions "The chat
completion object" (choices[].message.tool_calls, usage) and Anthropic Messages "Create a
Message" response (content[] tool_use blocks, stop_reason, usage).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.loopback import serve_in_thread


@dataclass(frozen=True)
class ToolUse:
    """One scripted reply: call `name` with `arguments`; the wire servers
    (`wire_servers.scripted`) also say `text` before the call and report `cache_read` and
    `cache_write` prompt tokens in the usage."""

    name: str
    arguments: dict[str, Any]
    text: str = ""
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True)
class Said:
    """One scripted reply of the wire servers (`wire_servers.scripted`): plain text, no
    call (a model that answers in words)."""

    text: str
    cache_read: int = 0
    cache_write: int = 0


@dataclass(frozen=True)
class Failure:
    """One scripted reply: an HTTP error with this status (400: not retried by the SDKs)."""

    status: int = 400
    message: str = "the scripted server refuses this request"


Reply = ToolUse | Failure


@dataclass
class Script:
    """The replies in order, and the request bodies received."""

    replies: list[Reply]
    received: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            self.received.append(body)
            index = len(self.received) - 1
        if index >= len(self.replies):
            return Failure(400, f"the script has no reply for request {index + 1}")
        return self.replies[index]


def chat_completion(reply: ToolUse, number: int) -> dict[str, Any]:
    """A Chat Completions response holding one tool call."""
    call = {
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def anthropic_message(reply: ToolUse, number: int) -> dict[str, Any]:
    """An Anthropic Messages response holding one tool_use block."""
    block = {
        "type": "tool_use",
        "id": f"toolu_{number}",
        "name": reply.name,
        "input": reply.arguments,
    }
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [block],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 20,
            "output_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 80 * number,
        },
    }


def _handler(script: Script, anthropic: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = script.next(body)
            if isinstance(reply, Failure):
                status = reply.status
                error = {"type": "invalid_request_error", "message": reply.message}
                payload: dict[str, Any] = (
                    {"type": "error", "error": error} if anthropic else {"error": error}
                )
            else:
                status = 200
                number = len(script.received)
                shape = anthropic_message if anthropic else chat_completion
                payload = shape(reply, number)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve(script: Script, *, anthropic: bool = False) -> Iterator[str]:
    """Serve `script` on 127.0.0.1; yields the base URL (with /v1 for Chat Completions)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script, anthropic))
    serve_in_thread(server)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield base if anthropic else f"{base}/v1"
    finally:
        server.shutdown()
        server.server_close()
