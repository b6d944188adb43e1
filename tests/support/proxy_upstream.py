"""A loopback upstream for `warmloop record`'s proxy tests, and a raw client to talk to it.

`Upstream` notes the request line of every request that reaches it, before parsing it (so a
test can show that a refused request never did), and answers with a scripted reply: a JSON
body (gzipped only when the request asked for gzip), a body cut short, a stream that dies,
or silence until the test's teardown sets `release`. `exchange` sends raw bytes to the
proxy over a socket and reads until the proxy closes the connection.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.loopback import serve_in_thread

LIVENESS_SECONDS = 60.0
"""A guard against hangs, far above what any exchange needs: not a timing assertion."""

Reply = Callable[["UpstreamHandler"], None]


@dataclass(frozen=True)
class Received:
    """A request the upstream read whole: its method, target, headers (as sent) and body."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes


class UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as an API's server: no 40 ms wait on a delayed ACK
    upstream: Upstream
    received: Received

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.upstream.lines.append(self.requestline)  # parsed or refused, it got here
        return parsed

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        received = Received(self.command, self.path, list(self.headers.items()), body)
        self.received = received  # this request's, for a reply that reads it
        self.upstream.received.append(received)
        self.upstream.reply(self)

    do_GET = do_POST

    def head(self, length: int | None, content_type: str = "application/json") -> None:
        """The status line and headers of a 200: with a Content-Length, or chunked."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.flush()


def json_reply(handler: UpstreamHandler) -> None:
    """200 with a small JSON body, gzipped when (and only when) the request asked for it,
    and a cookie (as providers' edge servers set them)."""
    data = json.dumps({"id": "reply", "usage": {"prompt_tokens": 3}}).encode()
    gzipped = "gzip" in handler.headers.get("Accept-Encoding", "")
    if gzipped:
        data = gzip.compress(data)
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    if gzipped:
        handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Set-Cookie", "edge=upstream-cookie; Path=/")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


PROMISED = 100
SENT = b'{"id": "cut'
"""What the short replies send of the PROMISED bytes."""


def dies_short_of_its_length(handler: UpstreamHandler) -> None:
    """Promises PROMISED bytes, sends a few, and closes the connection."""
    handler.head(PROMISED)
    handler.wfile.write(SENT)
    handler.close_connection = True


def stalls_short_of_its_length(handler: UpstreamHandler) -> None:
    """Promises PROMISED bytes, sends a few, and then nothing until the test's teardown."""
    handler.head(PROMISED)
    handler.wfile.write(SENT)
    handler.wfile.flush()
    handler.upstream.release.wait()
    handler.close_connection = True


FIRST_EVENT = b'data: {"n": 1}\n\n'


def dies_mid_stream(handler: UpstreamHandler) -> None:
    """A chunked event stream that sends one event and closes without its last chunk."""
    handler.head(None, "text/event-stream")
    handler.wfile.write(b"%x\r\n%s\r\n" % (len(FIRST_EVENT), FIRST_EVENT))
    handler.close_connection = True


def never_answers(handler: UpstreamHandler) -> None:
    """Reads the request and sends nothing until the test's teardown."""
    handler.upstream.release.wait()
    handler.close_connection = True


class Upstream:
    """The scripted upstream on a free loopback port, served from a thread."""

    def __init__(self, reply: Reply = json_reply) -> None:
        self.reply = reply
        self.lines: list[str] = []
        self.received: list[Received] = []
        self.release = threading.Event()
        handler = type("Handler", (UpstreamHandler,), {"upstream": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = serve_in_thread(self.server)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def forget(self) -> None:
        """Start a new case: nothing seen yet."""
        self.lines.clear()
        self.received.clear()

    def close(self) -> None:
        self.release.set()  # a stalled reply ends now
        self.server.shutdown()
        self.thread.join()
        self.server.server_close()

    def __enter__(self) -> Upstream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def exchange(port: int, raw: bytes, *, then_close: bool = False) -> bytes:
    """Send `raw` to 127.0.0.1:`port` (then end the sending side, if asked) and return all
    that comes back until the other side closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=LIVENESS_SECONDS) as sock:
        sock.sendall(raw)
        if then_close:
            sock.shutdown(socket.SHUT_WR)
        chunks: list[bytes] = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


@dataclass(frozen=True)
class Response:
    """A response read off the wire: status, headers (names lower-cased) and the raw rest."""

    status: int
    headers: dict[str, str]
    rest: bytes


def parse(data: bytes) -> Response:
    """The first response in `data` (the rest holds its body and anything after it)."""
    head, separator, rest = data.partition(b"\r\n\r\n")
    assert separator, f"no complete response came back: {data!r}"
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Response(int(lines[0].split()[1]), headers, rest)


def request(target: bytes, body: bytes, *headers: bytes) -> bytes:
    """A raw POST of `body` to `target` with these extra header lines."""
    lines = [b"POST " + target + b" HTTP/1.1", b"Host: 127.0.0.1", *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body
