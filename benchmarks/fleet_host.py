"""A loopback host for fleet tests and benchmarks: an OpenAI-compatible chat server (vLLM's
shapes, as in `loopback_host.py`) that scripts every task, and a tool endpoint, both of
which log what arrived, so a test can count requests sent twice and tools run twice.

Each worker reaches it under its own path (`/w/<worker>/v1`), so the host knows which worker
sent what. A task's text holds its id (`task-<n>`); the script is a function of the request:
at step k (assistant turns so far) the model calls `work` (two calls at step 1, so a step
can be cut between its results) until step `steps`, then `submit`. Call ids are
`call_<k>_<i>`: the same request always gets the same reply.

Every reply's `usage.completion_tokens` is the response's sequence number at the host, so
the session store's request records say which response of a step was the one stored.
`hold` parks chosen requests or tool calls until released (a test kills the worker that
sent it meanwhile); `latency` adds a seeded delay per (task, step).

`cache` says what each reply's usage reports of a prefix cache the host keeps over the prompt
as a model reads it (tools, then messages), by 256-byte blocks, a request's blocks cached
once it is answered:
`prompt_tokens_details.cached_tokens` for what was cached and `cache_write_tokens` for the
rest (`"writes"`, OpenAI's Chat Completions usage on GPT-5.6 and later), `cached_tokens`
only (`"reads"`, older OpenAI models and vLLM with `--enable-prompt-tokens-details`), or
neither (`"none"`). Each arrival keeps the routing key its request carried (`X-Session-ID`).

With `stored` (a task's stored messages, read from the session store), the host checks each
arrival against the store at the moment it arrives, when any worker that died before it is
gone for good: a request for a step whose response is stored, or a tool call whose result
is stored, is a `violations` entry. So the check is exact wherever a worker was killed.
"""

from __future__ import annotations

import hashlib
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from warmloop import AssistantTurn, ToolResult
from warmloop.messages import Message

MODEL = "served-model"
TASK = re.compile(r"task-\d+")
BLOCK = 256
"""The host's cache block, in bytes of the request body (4 bytes a token)."""
PATH = re.compile(r"^/w/([A-Za-z0-9_-]+)(/v1/models|/v1/chat/completions|/v1/responses|/tool)$")


@dataclass(frozen=True)
class Arrival:
    """One request or tool call as it arrived: its sequence number, sender and key."""

    seq: int
    worker: str
    task: str
    step: int
    kind: str  # "request", "tool-enter", "tool-return"
    call: str = ""
    body: str = ""
    at: float = 0.0
    key: str = ""
    """The request's routing key (its `X-Session-ID` header)."""
    usage: dict[str, Any] = field(default_factory=dict)
    """The usage its reply reported (a request's; empty for a tool call)."""


@dataclass
class FleetHost:
    """The script, the holds, and the log of everything that arrived."""

    steps: int = 3
    window: int = 128_000
    latency: Callable[[str, int], float] = lambda task, step: 0.0
    hold: set[tuple[str, int, str]] = field(default_factory=set)
    """(task, step, "request" | "tool:<part>") to park once, the first time it arrives; once
    released it is dropped unanswered (its sender was killed meanwhile)."""
    answer_held: bool = False
    """Answer a released arrival instead (its sender lived through something else meanwhile,
    such as a database restart)."""
    log: list[Arrival] = field(default_factory=list)
    held: queue.Queue[Arrival] = field(default_factory=queue.Queue)
    """Each parked arrival, as it is parked."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    stored: Callable[[str], Sequence[Message]] | None = None
    violations: list[str] = field(default_factory=list)
    cache: Literal["writes", "reads", "none"] = "writes"
    _cached: set[bytes] = field(default_factory=set)
    _release: dict[tuple[str, int, str], threading.Event] = field(default_factory=dict)

    def _check(self, task: str, step: int, call: str) -> None:
        if self.stored is None:
            return
        messages = self.stored(task)
        if not call and sum(isinstance(m, AssistantTurn) for m in messages) > step:
            self.violations.append(f"{task}: request {step} sent after its response was stored")
        if call and any(isinstance(m, ToolResult) and m.call_id == call for m in messages):
            self.violations.append(f"{task}: {call} run after its result was stored")

    def release(self, arrival: Arrival) -> None:
        part = arrival.call.rpartition("_")[2]
        kind = f"tool:{part}" if arrival.call else "request"
        self._release[(arrival.task, arrival.step, kind)].set()

    def _arrive(
        self, worker: str, task: str, step: int, kind: str, call: str, body: str, routing: str = ""
    ) -> Arrival | None:
        """Log an arrival; None when it was parked (and is now dropped)."""
        with self.lock:
            seq = len(self.log) + 1
            arrival = Arrival(seq, worker, task, step, kind, call, body, time.time(), routing)
            self.log.append(arrival)
            key = (task, step, f"tool:{call.rpartition('_')[2]}" if call else "request")
            park = kind != "tool-return" and key in self.hold and key not in self._release
            if park:
                self._release[key] = threading.Event()
        if park:
            self.held.put(arrival)
            self._release[key].wait()
            return arrival if self.answer_held else None
        return arrival

    def _usage(self, body: dict[str, Any], completion: int) -> dict[str, Any]:
        """The reply's usage: the prompt's size, and what `cache` reports of its blocks
        cached before (then caching them all, as the answer lands)."""
        parts = [body.get("tools") or [], *body["messages"]]
        raw = "".join(json.dumps(part, sort_keys=True) for part in parts).encode()
        prompt = len(raw) // 4
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        digest = hashlib.sha256()
        read, hit = 0, True
        with self.lock:
            for end in range(BLOCK, len(raw) + 1, BLOCK):
                digest.update(raw[end - BLOCK : end])
                block = digest.copy().digest()
                hit = hit and block in self._cached
                read += BLOCK // 4 if hit else 0
                self._cached.add(block)
        if self.cache != "none":
            details: dict[str, int] = {"cached_tokens": read}
            if self.cache == "writes" and prompt > read:
                details["cache_write_tokens"] = prompt - read
            usage["prompt_tokens_details"] = details
        return usage

    def answer(self, worker: str, raw: bytes, key: str = "") -> dict[str, Any] | None:
        body = json.loads(raw)
        messages = body["messages"]
        found = TASK.search(next(m["content"] for m in messages if m["role"] == "user"))
        task = found.group(0) if found else "task-?"
        step = sum(m["role"] == "assistant" for m in messages)
        self._check(task, step, "")
        arrival = self._arrive(worker, task, step, "request", "", raw.decode(), key)
        if arrival is None:
            return None
        time.sleep(self.latency(task, step))
        if step < self.steps:
            count = 2 if step == 1 else 1
            calls = [("work", {"task": task, "step": step, "part": i}) for i in range(count)]
        else:
            calls = [("submit", {"answer": f"{task} done"})]
        tool_calls = [
            {
                "id": f"call_{step}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(calls)
        ]
        usage = self._usage(body, arrival.seq)
        arrival.usage.update(usage)
        return {
            "id": f"chatcmpl-{arrival.seq}",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": tool_calls},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": usage,
        }

    def respond(self, worker: str, raw: bytes, key: str = "") -> dict[str, Any] | None:
        """A Responses API reply ("The response object"): a request marked
        `prompt_cache_options.prewarm` generates nothing and is logged as a "prewarm" (its
        prompt written, `input_tokens_details.cache_write_tokens`); any other submits at
        once. For the fan-out's warm-up on a model that prewarms."""
        body = json.loads(raw)
        text = next(i["content"] for i in body["input"] if i.get("role") == "user")
        found = TASK.search(text if isinstance(text, str) else json.dumps(text))
        task = found.group(0) if found else "task-?"
        prewarm = bool((body.get("prompt_cache_options") or {}).get("prewarm"))
        kind = "prewarm" if prewarm else "request"
        key = key or str(body.get("prompt_cache_key") or "")
        arrival = self._arrive(worker, task, 0, kind, "", raw.decode(), key)
        if arrival is None:
            return None
        tokens = len(raw) // 4
        cached = 0 if prewarm else tokens // 2
        output = [
            {
                "id": f"fc_{arrival.seq}",
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{arrival.seq}",
                "name": "submit",
                "arguments": json.dumps({"answer": f"{task} done"}),
            }
        ]
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {
                "cached_tokens": cached,
                "cache_write_tokens": tokens - cached,
            },
            "output_tokens": 0 if prewarm else 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + (0 if prewarm else 5),
        }
        arrival.usage.update(usage)
        return {
            "id": f"resp_{arrival.seq}",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": body.get("model", MODEL),
            "output": [] if prewarm else output,
            "usage": usage,
        }

    def tool(self, worker: str, raw: bytes) -> dict[str, Any] | None:
        call = json.loads(raw)
        task, step, part = call["task"], call["step"], call["part"]
        self._check(task, step, f"call_{step}_{part}")
        if self._arrive(worker, task, step, "tool-enter", f"call_{step}_{part}", "") is None:
            return None
        with self.lock:
            seq = len(self.log) + 1
            self.log.append(
                Arrival(seq, worker, task, step, "tool-return", f"call_{step}_{part}", "")
            )
        return {"result": f"{task} step {step} part {part} worked"}

    def requests(self) -> list[Arrival]:
        return [a for a in self.log if a.kind == "request"]


def _handler(host: FleetHost) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            del format, args

        def _send(self, status: int, body: dict[str, Any] | None) -> None:
            if body is None:
                self.close_connection = True  # a dropped arrival: no answer
                return
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the worker was killed while its request was parked

        def do_GET(self) -> None:
            found = PATH.match(self.path)
            if found is None or found.group(2) != "/v1/models":
                self._send(404, {"error": {"message": "not found"}})
                return
            card = {"id": MODEL, "object": "model", "owned_by": "vllm"}
            self._send(200, {"object": "list", "data": [dict(card, max_model_len=host.window)]})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            found = PATH.match(self.path)
            if found is None or found.group(2) == "/v1/models":
                self._send(404, {"error": {"message": "not found"}})
            elif found.group(2) == "/tool":
                self._send(200, host.tool(found.group(1), raw))
            elif found.group(2) == "/v1/responses":
                key = self.headers.get("X-Session-ID") or ""
                self._send(200, host.respond(found.group(1), raw, key))
            else:
                key = self.headers.get("X-Session-ID") or ""
                self._send(200, host.answer(found.group(1), raw, key))

    return Handler


@contextmanager
def serve(host: FleetHost) -> Iterator[str]:
    """Run `host` on a free loopback port; yields its root URL (`http://127.0.0.1:N`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(host))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
