"""Closing the proxy loses no request in flight: a client has its answer a moment before the
proxy writes the request's log line, so `close()` right after (a recorder stopped as its client
exits, a test reading the log) waits for the requests in flight, at most `DRAIN_SECONDS`, and
says so. The upstream is the proxy's own transport answering Messages ("Messages > Create"),
held until the close has begun; the client is the official SDK over loopback."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anthropic
import httpx2

from warmloop.exchange.log import read_log
from warmloop.proxy.server import Proxy

HANG_GUARD = 120.0
"""A hang guard only: every wait below ends on an event."""
REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Done."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 20, "output_tokens": 3},
}


def test_close_waits_for_the_request_in_flight_to_be_logged(tmp_path: Path) -> None:
    arrived, release, waiting = threading.Event(), threading.Event(), threading.Event()
    said: list[str] = []

    def upstream(request: httpx2.Request) -> httpx2.Response:
        arrived.set()
        release.wait(HANG_GUARD)
        body = iter([json.dumps(REPLY).encode()])  # streamed, as a real upstream's body is
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=body)

    def warn(message: str) -> None:
        said.append(message)
        if message.startswith("closing: waiting"):
            waiting.set()

    out = tmp_path / "requests.jsonl"
    proxy = Proxy("https://api.anthropic.com", out, transport=httpx2.MockTransport(upstream))
    proxy.warn = warn  # type: ignore[method-assign]  # what it says, read by the test
    proxy.start()
    client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
    answers: list[str] = []

    def ask() -> None:
        reply = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            messages=[{"role": "user", "content": "Fix the parser."}],
        )
        answers.append(reply.content[0].text)  # type: ignore[union-attr]

    asking = threading.Thread(target=ask)
    asking.start()
    assert arrived.wait(HANG_GUARD)
    closing = threading.Thread(target=proxy.close)
    closing.start()
    assert waiting.wait(HANG_GUARD), said  # close() said it waits for the request in flight
    release.set()
    asking.join(HANG_GUARD)
    closing.join(HANG_GUARD)
    assert not closing.is_alive()
    assert answers == ["Done."], said
    (logged,) = read_log(out).requests
    assert logged.usage is not None
    assert not any("not logged" in line for line in said)
