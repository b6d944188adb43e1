"""`answered_at` in the log the proxy writes (issue 34): epoch seconds when the answer's last
byte went to the client, so the audit can tell a request sent before its parent's answer
came (`audit.misses`, "not-landed"). The upstream is the proxy's own transport streaming
Messages server-sent events ("Messages > Streaming": `message_start` with the usage, then
`message_stop`) with the clock moved between its first and last event; the client is the
official SDK over loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx2

from warmloop.exchange.log import read_log
from warmloop.proxy.server import Proxy

START = 1_800_000_000.0
STREAMING = 7.0
"""Seconds the answer takes between its first and last event (on the fake clock)."""


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def events(clock: Clock) -> Iterator[bytes]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 1},
        },
    }
    yield f"event: message_start\ndata: {json.dumps(start)}\n\n".encode()
    clock.now += STREAMING  # the model generates
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 3},
    }
    yield f"event: message_delta\ndata: {json.dumps(delta)}\n\n".encode()
    yield b'event: message_stop\ndata: {"type": "message_stop"}\n\n'


def test_the_log_says_when_the_last_byte_of_the_answer_came(tmp_path: Path) -> None:
    clock, out = Clock(), tmp_path / "requests.jsonl"

    def upstream(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx2.Response(200, headers=headers, content=events(clock))

    transport = httpx2.MockTransport(upstream)
    with Proxy("https://api.anthropic.com", out, transport=transport, clock=clock).start() as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
        with client.messages.stream(
            model="claude-sonnet-4-6",
            max_tokens=64,
            messages=[{"role": "user", "content": "Fix the parser."}],
        ) as stream:
            stream.until_done()
        assert proxy.wait_handled(1, 60.0)  # a hang guard only
    (logged,) = read_log(out).requests
    assert logged.at == START
    assert logged.answered_at == START + STREAMING
