"""A loopback OpenAI-compatible host that publishes its window the way vLLM does, for
benchmarks (and tests) that must run warmloop with every default, as a user would.

Shapes follow vLLM's OpenAI-compatible server: `GET /v1/models` lists the served model with
`max_model_len` (its `ModelCard`), and `POST /v1/chat/completions` answers "The chat
completion object" with `usage.prompt_tokens_details.cached_tokens` (vLLM with
`--enable-prompt-tokens-details`): here the longest common prefix with any earlier request,
as automatic prefix caching reuses every full block it still holds (about four characters a
token; blocks are not rounded, so 100% reuse is the physical limit). `publish=False` serves a
host that publishes no window (a gateway, an older server). A prompt longer than the window
is refused as vLLM refuses it (400, `context_length_exceeded`, "This model's maximum context
length is N tokens. However, you requested M tokens ..."), so a client that was told no
window learns it from the rejection.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from warmloop.wire.guard import common_prefix_length

CHARS_PER_TOKEN = 4
MODEL = "served-model"

Step = Callable[[dict[str, Any]], "tuple[str, dict[str, Any]] | str"]
"""From a request body, the tool call to answer with, (name, arguments), or a text."""


def prompt_text(body: dict[str, Any]) -> str:
    """What the engine evaluates: the tools, then the messages, in request order."""
    return json.dumps([body.get("tools"), body.get("messages")], ensure_ascii=False)


@dataclass
class Host:
    """The host's script and what it saw: each request's prompt and cached tokens."""

    step: Step
    window: int = 128_000
    publish: bool = True
    prompts: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        text = prompt_text(body)
        with self.lock:
            reused = max((common_prefix_length(text, t) for t in self.texts[-8:]), default=0)
            self.texts.append(text)
            number = len(self.texts)
            prompt = math.ceil(len(text) / CHARS_PER_TOKEN)
            cached = min(reused // CHARS_PER_TOKEN, prompt)
            self.prompts.append(prompt)
            self.cached.append(cached)
        reply = self.step(body)
        message: dict[str, Any] = {"role": "assistant", "content": reply, "tool_calls": None}
        if not isinstance(reply, str):
            name, arguments = reply
            call = {
                "id": f"call_{number}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "stop" if isinstance(reply, str) else "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 20,
                "total_tokens": prompt + 20,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }

    def refusal(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """vLLM's 400 for a prompt past the window, or None where it fits."""
        prompt = math.ceil(len(prompt_text(body)) / CHARS_PER_TOKEN)
        if prompt <= self.window:
            return None
        with self.lock:
            self.refused += 1
        message = (
            f"This model's maximum context length is {self.window} tokens. However, you "
            f"requested {prompt} tokens in the messages. Please reduce the length of the messages."
        )
        return {
            "error": {
                "message": message,
                "type": "BadRequestError",
                "param": None,
                "code": "context_length_exceeded",
            }
        }

    def models(self) -> dict[str, Any]:
        card: dict[str, Any] = {"id": MODEL, "object": "model", "owned_by": "vllm"}
        if self.publish:
            card["max_model_len"] = self.window
        return {"object": "list", "data": [card]}

    @property
    def reuse(self) -> float:
        """Cached tokens against the physical limit (each request's predecessor's length)."""
        limit = sum(min(a, b) for a, b in zip(self.prompts, self.prompts[1:], strict=False))
        return sum(self.cached[1:]) / limit if limit else 1.0


def _handler(host: Host) -> type[BaseHTTPRequestHandler]:
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

        def do_GET(self) -> None:
            if self.path.split("?")[0] == "/v1/models":
                self._send(200, host.models())
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.split("?")[0] != "/v1/chat/completions":
                self._send(404, {"error": {"message": "not found"}})
                return
            refusal = host.refusal(body)
            if refusal is not None:
                self._send(400, refusal)
            else:
                self._send(200, host.answer(body))

    return Handler


@contextmanager
def serve(host: Host) -> Iterator[str]:
    """Run `host` on a free loopback port; yields its base URL (`http://127.0.0.1:N/v1`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(host))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
