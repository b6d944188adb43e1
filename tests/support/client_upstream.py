"""The loopback model the real coding agents talk to (tests/proxy/test_real_clients.py).

It speaks Anthropic Messages ("Messages > Streaming": message_start, content_block_start /
delta / stop, message_delta, message_stop) and OpenAI Responses ("Responses > Streaming":
response.created, response.output_item.added, the text or arguments deltas,
response.output_item.done, response.completed), streamed or whole, on `proxy_upstream`'s
server, which keeps every request it read. Usage is `fake_api`'s perfect prefix cache per
routing key with a 300-second TTL on the test's clock.

What it answers is a script a test writes in its prompt, so each client's own tools run:
a user turn that says `RUN: <command>` gets a call to the client's shell tool with that
command, one that says `DELEGATE: <task>` a call to its sub-agent tool with that task;
a request whose newest item is a tool's result gets a text answer, as does every other
request (a client's title or topic side requests).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.support.fake_api import Clock, FakeApi, sse
from tests.support.proxy_upstream import Upstream, UpstreamHandler
from warmloop.messages import JsonValue

ANSWER = "All done: the command ran."
"""The text every answer that calls no tool gives."""
RUN = re.compile(r'RUN: ([^"\n]+)')
DELEGATE = re.compile(r'DELEGATE: ([^"\n]+)')
Arguments = Callable[[str], dict[str, JsonValue]]
"""A tool call's arguments for the scripted command or task."""
SHELLS: dict[str, Arguments] = {
    # a client's shell tool: its call's arguments for `command`
    "Bash": lambda command: {"command": command, "description": "Run the asked command"},
    "bash": lambda command: {"command": command, "description": "Run the asked command"},
    "shell": lambda command: {"command": ["bash", "-lc", command]},
    "shell_command": lambda command: {"command": command},
    "exec_command": lambda command: {"cmd": command},
}
AGENTS: dict[str, Arguments] = {
    # a client's sub-agent tool: its call's arguments for `task`
    "Task": lambda task: {
        "description": "Delegated task",
        "prompt": task,
        "subagent_type": "general-purpose",
    },
    "Agent": lambda task: {
        "description": "Delegated task",
        "prompt": task,
        "subagent_type": "general-purpose",
    },
    "task": lambda task: {
        "description": "Delegated task",
        "prompt": task,
        "subagent_type": "general",
    },
}


@dataclass(frozen=True)
class Turn:
    """What the script makes of a request: a tool call (name and arguments) or text."""

    tool: str | None
    arguments: Mapping[str, JsonValue]
    text: str = ANSWER


def _text_of(value: Any) -> str:
    """A turn's text, whatever its shape: a string, or its parts' `text` and `content`
    (a tool result's), one a line."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(_text_of(value.get(name)) for name in ("text", "content"))
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    return ""


def decide(last: Any, answered_a_tool: bool, tools: Sequence[str]) -> Turn:
    """The script's move on a request whose newest item is `last`."""
    if answered_a_tool:
        return Turn(None, {})
    text = _text_of(last)
    delegate = DELEGATE.search(text)
    run = RUN.search(text)
    for name in tools:
        if delegate is not None and name in AGENTS:
            return Turn(name, AGENTS[name](delegate.group(1).strip()))
    for name in tools:
        if run is not None and delegate is None and name in SHELLS:
            return Turn(name, SHELLS[name](run.group(1).strip().strip("`")))
    return Turn(None, {})


class ScriptedModel:
    """The upstream's replies: the script's turn, in the request's wire, with usage from
    the prefix cache model."""

    def __init__(self, clock: Clock) -> None:
        self.api = FakeApi(clock)
        self.lock = threading.Lock()
        self.calls = 0
        self.cached: list[int] = []
        """The cached prompt tokens of each model request answered, in order."""

    def __call__(self, handler: UpstreamHandler) -> None:
        path = handler.path.split("?", 1)[0]
        try:
            body = json.loads(handler.received.body)
        except ValueError:
            body = None
        if not isinstance(body, dict) or handler.command != "POST":
            _send_json(handler, 404, {"error": {"message": f"no such route: {path}"}})
            return
        with self.lock:
            self.calls += 1
            if path.endswith("/messages"):
                events = self.messages(body)
            elif path.endswith("/responses"):
                events = self.responses(body)
            else:
                _send_json(handler, 404, {"error": {"message": f"no such route: {path}"}})
                return
        if isinstance(events, dict):
            _send_json(handler, 200, events)
            return
        handler.head(None, "text/event-stream")
        for chunk in events:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")

    def usage(self, body: dict[str, Any]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) by the prefix cache model, noted."""
        total, cached = self.api.usage(body)
        self.cached.append(cached)
        return total, cached

    def messages(self, body: dict[str, Any]) -> dict[str, Any] | list[bytes]:
        """An Anthropic Messages answer: a Message, or its stream of events."""
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        content = users[-1].get("content") if users else None
        answered = isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") == "tool_result" for block in content
        )
        tools = [str(tool.get("name")) for tool in body.get("tools") or []]
        turn = decide(content, answered, tools)
        total, cached = self.usage(body)
        marked = "cache_control" in json.dumps(body)
        written = total - cached if marked else 0
        usage = {
            "input_tokens": total - cached - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": cached,
            "output_tokens": 12,
        }
        if turn.tool is not None:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_{self.calls:04d}",
                "name": turn.tool,
                "input": dict(turn.arguments),
            }
            stop = "tool_use"
        else:
            block = {"type": "text", "text": turn.text}
            stop = "end_turn"
        message = {
            "id": f"msg_{self.calls:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return message
        return sse(_message_events(message), named=True)

    def responses(self, body: dict[str, Any]) -> dict[str, Any] | list[bytes]:
        """An OpenAI Responses answer: the response object, or its stream of events."""
        items = body.get("input")
        items = items if isinstance(items, list) else [{"role": "user", "content": items}]
        turns = [
            item
            for item in items
            if isinstance(item, dict)
            and (item.get("role") == "user" or str(item.get("type", "")).endswith("_output"))
        ]
        last = turns[-1] if turns else {}
        answered = str(last.get("type", "")).endswith("_output")
        tools = [
            str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict)
        ]
        turn = decide(last, answered, tools)
        total, cached = self.usage(body)
        n = self.calls
        if turn.tool is not None:
            item: dict[str, Any] = {
                "id": f"fc_{n}",
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{n}",
                "name": turn.tool,
                "arguments": json.dumps(dict(turn.arguments)),
            }
        else:
            part = {"type": "output_text", "text": turn.text, "annotations": []}
            item = {
                "id": f"msg_{n}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        response = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": int(self.api.clock()),
            "status": "completed",
            "model": body.get("model"),
            "output": [item],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": total,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": 12,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": total + 12,
            },
        }
        if not body.get("stream"):
            return response
        return sse(_response_events(response, item), named=True)


def _message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A Message's stream: message_start, its one block's start, delta and stop,
    message_delta with the stop reason and output tokens, message_stop."""
    (block,) = message["content"]
    if block["type"] == "tool_use":
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        opened = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    return [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": opened},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
        {"type": "message_stop"},
    ]


def _response_events(response: dict[str, Any], item: dict[str, Any]) -> list[dict[str, Any]]:
    """A response's stream: created, the item added, its deltas, the item done, completed
    (each event numbered)."""
    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": opening}]
    if item["type"] == "function_call":
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "arguments": ""},
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 0,
                "item_id": item["id"],
                "delta": item["arguments"],
            },
            {
                "type": "response.function_call_arguments.done",
                "output_index": 0,
                "item_id": item["id"],
                "arguments": item["arguments"],
            },
        ]
    else:
        part = item["content"][0]
        where = {"output_index": 0, "item_id": item["id"], "content_index": 0}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **where, "delta": part["text"]},
            {"type": "response.output_text.done", **where, "text": part["text"]},
            {"type": "response.content_part.done", **where, "part": part},
        ]
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _send_json(handler: UpstreamHandler, status: int, value: Any) -> None:
    data = json.dumps(value).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def scripted_upstream(clock: Clock) -> tuple[Upstream, ScriptedModel]:
    """The loopback upstream answering with the script, and its model (for its clock)."""
    model = ScriptedModel(clock)
    return Upstream(model), model
