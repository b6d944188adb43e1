"""Keep-alives for many tenants while some answers are hostile (issue 46, must-show 3).

103 conversations pause at once behind `warmloop proxy` (its keep-alive thread on, a faked
clock); when their keep-alives fall due, the upstream answers three of them badly: one
sends its head and then nothing (stalled until the test ends), one streams bytes without
end, one streams an endless gzip bomb. Every other keep-alive reaches the upstream while the
stalled one is still held, the endless answers are read to their bound and no further (no
`MemoryError`, the memory Python allocates stays bounded: `tracemalloc`, counted, not
timed), and `close()` returns with the stalled one still held.

The upstream is a raw loopback HTTP/1.1 server (`tests.support.proxy_upstream`), answering
Anthropic Messages ("Messages > Create a Message", usage with
`cache_creation_input_tokens`): each first request writes a 20,000-token prefix.
"""

from __future__ import annotations

import json
import threading
import tracemalloc
import zlib
from typing import Any

import anthropic
import pytest

from tests.support.proxy_upstream import LIVENESS_SECONDS, Upstream, UpstreamHandler
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import Caps
from warmloop.proxy.ping_pool import ANSWER_BYTES, DECODED_BYTES
from warmloop.proxy.server import Proxy

OTHERS = 100
HOSTILE = ("stalled", "endless", "bomb")
START = 1_800_000_000.0
INTERVAL = 270.0
"""Claude's 5-minute TTL less the 30 s margin (`keepalive.rule.margin`)."""
BOUND = 64 * 1024 * 1024
"""What the keep-alives may allocate at their peak: a few answers' bounds, far below the
gigabytes the endless answers would inflate to."""


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Hostile:
    """The upstream's replies: a priced answer to each request and to the ordinary
    keep-alives (`max_tokens` 1), a hostile one to the keep-alives of the three tasks named
    in `HOSTILE`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pings = 0
        self.others = threading.Event()
        """Set once every ordinary keep-alive has arrived."""
        self.held = threading.Event()
        """Set once the stalled keep-alive is being held."""
        self.ended: dict[str, threading.Event] = {name: threading.Event() for name in HOSTILE[1:]}
        """Set when the proxy stopped reading an endless answer (its connection closed)."""

    def __call__(self, handler: UpstreamHandler) -> None:
        body = json.loads(handler.received.body)
        task = body["messages"][0]["content"]
        task = task if isinstance(task, str) else task[0]["text"]
        ping = body["max_tokens"] == 1
        if ping and task in HOSTILE:
            getattr(self, task)(handler)
            return
        if ping:
            with self.lock:
                self.pings += 1
                if self.pings == OTHERS:
                    self.others.set()
        usage = {
            "input_tokens": 10,
            "cache_creation_input_tokens": 0 if ping else 20_000,
            "cache_read_input_tokens": 20_000 if ping else 0,
            "output_tokens": 1,
        }
        reply = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        data = json.dumps(reply).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def stalled(self, handler: UpstreamHandler) -> None:
        handler.head(None, "text/event-stream")
        self.held.set()
        handler.upstream.release.wait()
        handler.close_connection = True

    def endless(self, handler: UpstreamHandler) -> None:
        """A gzip body of empty deflate blocks without end: bytes that inflate to nothing,
        so only a bound on the compressed bytes ends it."""
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip stream
        start = packer.compress(b"") + packer.flush(zlib.Z_SYNC_FLUSH)  # byte-aligned
        empty = b"\x00\x00\x00\xff\xff" * 10_000  # empty stored blocks, not the last
        self._gzipped(handler, iter([start]), lambda: empty, "endless")

    def bomb(self, handler: UpstreamHandler) -> None:
        """A gzip body of zeros without end: a kilobyte inflates to a megabyte."""
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = bytes(1024 * 1024)
        self._gzipped(
            handler,
            iter(()),
            lambda: packer.compress(zeros) + packer.flush(zlib.Z_SYNC_FLUSH),
            "bomb",
        )

    def _gzipped(self, handler: UpstreamHandler, first: Any, part: Any, name: str) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        self._chunks(handler, lambda: next(first, None) or part(), name)

    def _chunks(self, handler: UpstreamHandler, part: Any, name: str) -> None:
        try:
            while not handler.upstream.release.is_set():
                data = part()
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.ended[name].set()  # the proxy read its bound and closed
        handler.close_connection = True


def test_hostile_answers_delay_no_other_keep_alive_and_memory_stays_bounded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    replies = Hostile()
    clock = Clock()
    caps = Caps(conversation_usd=5.0, daily_usd=100.0)
    with Upstream(replies) as upstream:
        proxy = Proxy(upstream.url, None, clock=clock, fixes=Fixes(), keepalive=caps).start()
        try:
            client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
            tasks = [*HOSTILE, *(f"Task {n}: fix what fails." for n in range(OTHERS))]
            for number, task in enumerate(tasks, start=1):
                client.messages.create(
                    model="claude-sonnet-4-6",
                    max_tokens=512,
                    system="You are terse.",
                    messages=[{"role": "user", "content": task}],
                )
                assert proxy.wait_handled(number, LIVENESS_SECONDS)
            keepalives = proxy.keepalives
            assert keepalives is not None
            keepalives.deadline = 10 * LIVENESS_SECONDS  # the stalled one outlasts the test
            stalled = proxy.status()["by_conversation"][-1]["id"]  # the first to pause
            tracemalloc.start()
            clock.now += INTERVAL
            keepalives.wake()  # the thread hands all 103 to the pool
            assert replies.held.wait(LIVENESS_SECONDS)
            assert replies.others.wait(LIVENESS_SECONDS)
            assert keepalives.holds(stalled)  # its keep-alive is still in flight
            assert all(ended.wait(LIVENESS_SECONDS) for ended in replies.ended.values())
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert not upstream.release.is_set()
            closing = threading.Thread(target=proxy.close)
            closing.start()
            closing.join(LIVENESS_SECONDS)
            assert not closing.is_alive()  # close() did not wait on the stalled answer
        finally:
            upstream.release.set()
            proxy.close()
    assert peak < BOUND
    assert ANSWER_BYTES + DECODED_BYTES < BOUND
    err = capsys.readouterr().err
    assert err.count("passed what is read of one") == 2
    assert "MemoryError" not in err
