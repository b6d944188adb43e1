"""`warmloop record`'s proxy against an upstream that misbehaves, over real loopback sockets:
one that dies or goes silent in the middle of a body, one that never answers, and what the
proxy sends upstream of a request's headers. A response whose status line is out is ended
by closing the connection (never a second response inside the first); silence before the
status line is a 504; each failure is one line on stderr, never a traceback."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.proxy_upstream import (
    FIRST_EVENT,
    LIVENESS_SECONDS,
    PROMISED,
    SENT,
    Reply,
    Upstream,
    dies_mid_stream,
    dies_short_of_its_length,
    exchange,
    never_answers,
    parse,
    request,
    stalls_short_of_its_length,
)
from warmloop.errors import ConfigurationError
from warmloop.proxy import server as recorder_module
from warmloop.proxy.server import Proxy

BODY = b'{"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}'
CHAT = b"/v1/chat/completions"
SHORT_TIMEOUT = 0.2
"""The upstream read timeout while a test waits for it: the stall itself is an Event."""


def post(*headers: bytes) -> bytes:
    return request(CHAT, BODY, b"Content-Length: %d" % len(BODY), *headers)


@pytest.fixture
def proxied(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Upstream, int]]:
    """An upstream replying with the test's `reply` param, and the proxy's port before it
    (with a short upstream read timeout only where the upstream stalls on an Event: an
    upstream that answers must never lose a race against a loaded machine's scheduler)."""
    reply: Reply = request.param
    if reply in (stalls_short_of_its_length, never_answers):
        monkeypatch.setattr(recorder_module, "UPSTREAM_READ_SECONDS", SHORT_TIMEOUT)
    with Upstream(reply) as upstream, Proxy(upstream.url, tmp_path / "log.jsonl") as proxy:
        proxy.start()
        yield upstream, int(proxy.server.server_address[1])


def one_line(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    printed = capsys.readouterr().err
    assert "Traceback" not in printed
    assert len(printed.splitlines()) == 1, printed
    for word in words:
        assert word in printed, printed


@pytest.mark.parametrize("proxied", [dies_short_of_its_length], indirect=True)
def test_an_upstream_that_dies_short_of_its_length_ends_the_response(
    proxied: tuple[Upstream, int], capsys: pytest.CaptureFixture[str]
) -> None:
    reply = exchange(proxied[1], post())  # keep-alive: only a close ends the wait
    response = parse(reply)
    assert response.status == 200
    assert response.headers["content-length"] == str(PROMISED)
    assert response.rest == SENT  # what came, then the end: no second response inside
    assert reply.count(b"HTTP/1.1") == 1
    one_line(capsys, "upstream", "closed")


@pytest.mark.parametrize("proxied", [dies_mid_stream], indirect=True)
def test_an_upstream_stream_that_dies_ends_without_its_last_chunk(
    proxied: tuple[Upstream, int], capsys: pytest.CaptureFixture[str]
) -> None:
    reply = exchange(proxied[1], post(b"Accept: text/event-stream", b"Connection: close"))
    response = parse(reply)
    assert response.status == 200
    assert response.headers["transfer-encoding"] == "chunked"
    # the event as it came, then the connection closed without the final `0` chunk, so the
    # client sees a broken stream, not a complete one
    assert response.rest == b"%x\r\n%s\r\n" % (len(FIRST_EVENT), FIRST_EVENT)
    assert reply.count(b"HTTP/1.1") == 1
    one_line(capsys, "upstream", "closed")


@pytest.mark.parametrize("proxied", [stalls_short_of_its_length], indirect=True)
def test_an_upstream_silent_in_the_middle_of_a_body_is_given_up(
    proxied: tuple[Upstream, int], capsys: pytest.CaptureFixture[str]
) -> None:
    upstream, port = proxied
    reply = exchange(port, post())
    response = parse(reply)
    assert response.status == 200
    assert response.rest == SENT
    assert not upstream.release.is_set()  # the proxy gave up; the upstream still stalls
    one_line(capsys, "upstream", "timed out", "closed")


@pytest.mark.parametrize("proxied", [never_answers], indirect=True)
def test_an_upstream_that_never_answers_is_a_504(
    proxied: tuple[Upstream, int], capsys: pytest.CaptureFixture[str]
) -> None:
    upstream, port = proxied
    response = parse(exchange(port, post(b"Connection: close")))
    assert response.status == 504
    message = json.loads(response.rest)["error"]["message"]
    assert message.startswith("warmloop record: ")
    assert "timed out" in message
    assert len(upstream.received) == 1
    one_line(capsys, "504", "timed out")


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[tuple[Upstream, int]]:
    with Upstream() as upstream, Proxy(upstream.url, tmp_path / "log.jsonl") as proxy:
        proxy.start()
        yield upstream, int(proxy.server.server_address[1])


def test_request_headers_go_upstream_as_sent(plain: tuple[Upstream, int]) -> None:
    """Nothing added (no Accept-Encoding, so no gzip the client did not ask for; no
    User-Agent of the proxy's own; no cookie an earlier response set), nothing dropped but
    hop-by-hop headers and Host."""
    upstream, port = plain
    sent = [
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer test"),
        ("X-Stainless-Lang", "python"),
        ("User-Agent", "their-agent/1.0"),
    ]
    hop = [b"Connection: close", b"Connection: X-Hop", b"X-Hop: one hop", b"Keep-Alive: 5"]
    lines = [f"{k}: {v}".encode() for k, v in sent]
    for _ in range(2):  # the second after a response that set a cookie
        response = parse(exchange(port, post(*lines, *hop)))
        assert response.status == 200
        assert "content-encoding" not in response.headers
        assert json.loads(response.rest)["id"] == "reply"
    for received in upstream.received:
        names = {"host", "content-length"}
        assert [(k, v) for k, v in received.headers if k.lower() not in names] == sent
        assert dict((k.lower(), v) for k, v in received.headers)["content-length"] == str(len(BODY))
        assert received.body == BODY


def test_a_client_that_asks_for_gzip_gets_the_gzip_as_sent(plain: tuple[Upstream, int]) -> None:
    response = parse(exchange(plain[1], post(b"Accept-Encoding: gzip", b"Connection: close")))
    assert response.headers["content-encoding"] == "gzip"
    assert response.rest.startswith(b"\x1f\x8b")  # relayed raw, not decoded on the way


def test_close_among_the_connection_options_ends_the_connection(
    plain: tuple[Upstream, int],
) -> None:
    upstream, port = plain
    response = parse(exchange(port, post(b"Connection: X-Hop, close", b"X-Hop: one hop")))
    assert response.status == 200  # and the exchange ended: the proxy closed
    (received,) = upstream.received
    assert "x-hop" not in {k.lower() for k, _ in received.headers}


@pytest.mark.parametrize(
    "upstream",
    ["http://127.0.0.1:port", "https://api.openai.com/v1?key=x", "https://api.openai.com/#v1"],
)
def test_an_upstream_that_is_no_base_url_is_refused_before_listening(
    upstream: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match="--upstream must be an http"):
        Proxy(upstream, tmp_path / "log.jsonl").close()


class Watched(Proxy):
    """A recorder that also signals each line it prints."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.warned = threading.Event()

    def warn(self, message: str) -> None:
        super().warn(message)
        self.warned.set()


def test_a_client_that_resets_mid_request_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Upstream() as upstream:
        proxy = Watched(upstream.url, tmp_path / "log.jsonl").start()
        try:
            port = int(proxy.server.server_address[1])
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"POST /v1/chat/comp")  # no end of the request line yet
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # linger 0: a reset, not an orderly close
            assert isinstance(proxy, Watched)
            assert proxy.warned.wait(LIVENESS_SECONDS)
        finally:
            proxy.close()
    assert upstream.lines == []
    one_line(capsys, "dropped a connection", "ConnectionResetError")
