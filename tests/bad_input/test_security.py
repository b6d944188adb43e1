"""Hostile requests to `warmloop record`'s proxy, sent as raw bytes over a socket.

Request targets that try to reach another host or leave the upstream's path (`@host`,
absolute URLs, `//host`, `:port`, backslashes, control bytes, dot segments), and bodies
whose framing lies (a Content-Length that is no number, negative, doubled, huge or longer
than the body; bad chunk sizes; unknown transfer codings), and requests http.server itself
refuses (an unknown method, a request line too long). Each is refused with its status,
a JSON error body and `Connection: close`, one line on stderr and no traceback; neither the
upstream nor a decoy server on another port ever sees it, and nothing is logged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.bad_input.harness import SECRET
from tests.proxy_upstream import Upstream, exchange, parse, request
from warmloop.audit.recorder import MAX_LINE, MAX_TRAILERS, Recorder

BODY = b'{"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}'
AUTH = b"Authorization: Bearer " + SECRET.encode()
DECOY = b"{decoy}"
"""Stands for the decoy server's port in a case's bytes."""


class Case(NamedTuple):
    """Raw request bytes, the status the proxy answers, and whether the client then ends
    its sending side (so a body shorter than announced ends)."""

    raw: bytes
    status: int
    then_close: bool = False


def post(target: bytes, body: bytes = BODY, *headers: bytes) -> bytes:
    """A POST whose framing is right unless `headers` say otherwise. It asks to keep the
    connection alive: only the proxy closing it ends the exchange."""
    framing = headers or (b"Content-Length: %d" % len(body),)
    return request(target, body, AUTH, b"Content-Type: application/json", *framing)


def chunked(data: bytes) -> bytes:
    return post(b"/v1/chat/completions", data, b"Transfer-Encoding: chunked")


def target(path: bytes) -> Case:
    return Case(post(path), 400)


CHAT = b"/v1/chat/completions"
CASES: dict[str, Case] = {
    # request targets: only a path on the upstream, never another host
    "at-another-host": target(b"@127.0.0.1:" + DECOY + CHAT),
    "userinfo-and-backslash": target(b"@127.0.0.1:" + DECOY + b"\\v1\\chat\\completions"),
    "absolute-url": target(b"http://127.0.0.1:" + DECOY + CHAT),
    "absolute-url-https": target(b"https://127.0.0.1:" + DECOY + CHAT),
    "scheme-relative": target(b"//127.0.0.1:" + DECOY + CHAT),
    "port-only": target(b":" + DECOY + CHAT),
    "backslash-host": target(b"\\\\127.0.0.1:" + DECOY + CHAT),
    "backslash-in-path": target(b"/v1\\..\\..\\admin"),
    "no-leading-slash": target(b"v1/chat/completions"),
    "query-only": target(b"?key=" + SECRET.encode()),
    "asterisk-form": target(b"*"),
    "nul-byte": target(CHAT + b"\x00"),
    "escape-byte": target(b"/v1/\x1b[2Jchat/completions"),
    "del-byte": target(CHAT + b"\x7f"),
    "non-ascii": target(b"/v1/caf\xc3\xa9"),
    "dot-segments": target(b"/v1/../../admin"),
    "encoded-dot-segments": target(b"/v1/%2e%2e/%2E%2E/admin"),
    "encoded-slash-and-dots": target(b"/v1/..%2f..%2fadmin"),
    # body framing: refused, never guessed at
    "content-length-not-a-number": Case(post(CHAT, b"", b"Content-Length: abc"), 400),
    "content-length-negative": Case(post(CHAT, b"", b"Content-Length: -1"), 400),
    "content-length-signed": Case(post(CHAT, b"", b"Content-Length: +0"), 400),
    "content-length-list": Case(post(CHAT, b"", b"Content-Length: 0, 0"), 400),
    "content-length-twice": Case(post(CHAT, b"", b"Content-Length: 0", b"Content-Length: 5"), 400),
    "content-length-huge": Case(post(CHAT, b"", b"Content-Length: 999999999999999"), 413),
    "body-shorter-than-its-length": Case(
        post(CHAT, BODY, b"Content-Length: %d" % (len(BODY) + 50)), 400, then_close=True
    ),
    "chunk-size-not-hex": Case(chunked(b"zz\r\n"), 400),
    "chunk-size-negative": Case(chunked(b"-5\r\n"), 400),
    "chunk-size-missing": Case(chunked(b"\r\n"), 400),
    "chunk-size-huge": Case(chunked(b"ffffffffffffffff\r\n"), 413),
    "chunk-cut-short": Case(chunked(b"10\r\n{}"), 400, then_close=True),
    "chunk-longer-than-its-size": Case(chunked(b"2\r\n{}XX\r\n0\r\n\r\n"), 400),
    # a size line cut at the limit must not be read as size 2 and its rest as the chunk
    "chunk-size-line-over-the-limit": Case(
        chunked(b"2;" + b"x" * (MAX_LINE - 1) + b"\r\n\r\n0\r\n\r\n"), 400
    ),
    "trailers-past-the-limit": Case(chunked(b"0\r\n" + b"X-T: 1\r\n" * (MAX_TRAILERS + 1)), 400),
    "transfer-coding-unknown": Case(post(CHAT, b"", b"Transfer-Encoding: gzip"), 501),
    # refused by http.server itself, answered in the same JSON
    "unknown-method": Case(post(CHAT).replace(b"POST", b"BREW", 1), 501),
    "escape-in-method": Case(post(CHAT).replace(b"POST", b"\x1b[2JPOST", 1), 501),
    "request-line-too-long": Case(post(b"/v1/" + b"a" * 70_000), 414),
}


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Upstream, Upstream]]:
    with Upstream() as upstream, Upstream() as decoy:
        yield upstream, decoy


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("record") / "requests.jsonl"


@pytest.fixture(scope="module")
def proxy(servers: tuple[Upstream, Upstream], log: Path) -> Iterator[Recorder]:
    with Recorder(servers[0].url, log).start() as recorder:
        yield recorder


@pytest.fixture
def fresh(servers: tuple[Upstream, Upstream]) -> tuple[Upstream, Upstream]:
    for server in servers:
        server.forget()
    return servers


def port_of(recorder: Recorder) -> int:
    return int(recorder.server.server_address[1])


@pytest.mark.parametrize("name", CASES)
def test_the_proxy_refuses_it_and_no_upstream_sees_it(
    name: str,
    fresh: tuple[Upstream, Upstream],
    proxy: Recorder,
    log: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    upstream, decoy = fresh
    case = CASES[name]
    raw = case.raw.replace(DECOY, str(decoy.port).encode())
    reply = exchange(port_of(proxy), raw, then_close=case.then_close)
    response = parse(reply)
    assert response.status == case.status, reply
    assert response.headers.get("connection") == "close"
    assert response.headers.get("content-type") == "application/json"
    message = json.loads(response.rest)["error"]["message"]
    assert message.startswith("warmloop record: ")
    assert upstream.lines == []
    assert decoy.lines == []
    assert log.read_bytes() == b""
    printed = capsys.readouterr().err
    assert "Traceback" not in printed
    assert len(printed.splitlines()) == 1, printed
    assert printed.rstrip("\n").isprintable(), printed  # no escape reaches the terminal
    assert SECRET not in printed + reply.decode("latin-1")


def test_a_fine_request_reaches_the_path_under_the_upstream_base(
    fresh: tuple[Upstream, Upstream], log: Path
) -> None:
    """The control for the table: a well-formed request goes through, under the base path."""
    upstream, decoy = fresh
    out = log.with_name("base.jsonl")
    with Recorder(f"{upstream.url}/api/", out).start() as proxy:
        fine = post(
            CHAT + b"?alt=sse", BODY, b"Content-Length: %d" % len(BODY), b"Connection: close"
        )
        reply = parse(exchange(port_of(proxy), fine))
    assert reply.status == 200
    assert [r.target for r in upstream.received] == ["/api/v1/chat/completions?alt=sse"]
    assert decoy.lines == []
    assert [json.loads(line)["path"] for line in out.read_text().splitlines()] == [
        "/v1/chat/completions"
    ]
