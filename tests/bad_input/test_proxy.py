"""Issue 46's probe of `warmloop proxy` (131 cases on its new surfaces), each finding a case
here that failed before its fix: hostile or careless clients and upstreams, raw bytes over
loopback (`tests.support.proxy_upstream`), the official SDKs where a client's shape
matters, the CLI as a user runs it.

The findings that need a crowd or a clock have their cases beside the proxy's tests:
200 clients at once (tests/proxy/test_proxy_identity.py), stalled, endless and gzip-bomb
keep-alive answers among 100 others (tests/proxy/test_proxy_keepalive_hostile.py), one-shot
jobs using the daily cap (tests/benchmarks/test_proxy_returns.py), a framework that rebuilds
its prompt and a client's markers nested in tool results
(tests/proxy/test_proxy_breakpoints.py).
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.bad_input.harness import SECRET
from tests.support.proxy_upstream import (
    LIVENESS_SECONDS,
    Upstream,
    UpstreamHandler,
    exchange,
    json_reply,
    parse,
    request,
)
from warmloop.cli.main import main
from warmloop.errors import ConfigurationError
from warmloop.proxy.body import MAX_REQUEST_BYTES
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import Caps
from warmloop.proxy.server import Limits, Proxy

FINDINGS = (
    "br and zstd advertised, usage unread",
    "no read timeout on clients",
    "no cap on open connections",
    "a 1 GiB body limit, parsed whole",
    "--keepalive-cap nan means no cap",
    "1e400 forwarded as Infinity",
    "headers the upstream's Connection names relayed",
    "--status against another server: RecursionError",
    "--status against another server: KeyError",
    "the upstream's password in the banner",
    "a refusal echoes ?key=",
    "an embedded Proxy logs httpx's line with ?key=",
    "the bust's detail carries prompt text to telemetry",
    "Codex's turn_id makes a parameters bust",
    "50 clients at once: merged, false busts",
    "sub-agents under one user_id: false busts",
    "the status page shows metadata.user_id",
    "GPT-5.6 opening after additional_tools unmarked",
    "a marker inside tool_result.content unseen: 5 markers",
    "a stalled keep-alive answer holds every keep-alive and close()",
    "an endless or gzip-bomb keep-alive answer: MemoryError",
    "tenants' system prompts differ: one conversation",
)
"""The probe's findings (issue 46), each a case here or beside the proxy's tests."""
MESSAGES = b"/v1/messages"
CHAT = b"/v1/chat/completions"
ROOT = Path(__file__).resolve().parents[2]


def body_of(value: Any) -> bytes:
    return json.dumps(value).encode()


def post(target: bytes, body: bytes, *headers: bytes) -> bytes:
    return request(target, body, b"Content-Length: %d" % len(body), b"Connection: close", *headers)


def port_of(proxy: Proxy) -> int:
    return int(proxy.server.server_address[1])


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


def proxy_on(upstream: Upstream, **options: Any) -> Proxy:
    return Proxy(upstream.url, None, fixes=Fixes(), guard=True, name="warmloop proxy", **options)


def claude(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": text}],
        **extra,
    }


# Encodings: Claude Code, Codex and opencode advertise br and zstd; an answer in either left
# the usage unread (no figures, no keep-alive).


@pytest.mark.parametrize("offered", ["gzip, deflate, br, zstd", "br", "zstd;q=1.0, *;q=0.1"])
def test_a_model_request_asks_only_for_the_encodings_the_proxy_reads(
    upstream: Upstream, offered: str
) -> None:
    with proxy_on(upstream).start() as proxy:
        raw = post(MESSAGES, body_of(claude("hi")), f"Accept-Encoding: {offered}".encode())
        assert parse(exchange(port_of(proxy), raw)).status == 200
    (received,) = upstream.received
    asked = dict((k.lower(), v) for k, v in received.headers)["accept-encoding"]
    codings = {part.split(";")[0].strip() for part in asked.split(",")}
    assert codings <= {"gzip", "deflate", "identity"}, asked


# Limits a front end needs: a silent client, too many connections, a huge body.


def test_a_silent_client_is_disconnected(upstream: Upstream) -> None:
    proxy = proxy_on(upstream, limits=Limits(client_seconds=0.2)).start()
    address = ("127.0.0.1", port_of(proxy))
    with proxy, socket.create_connection(address, LIVENESS_SECONDS) as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\n")  # and then nothing
        assert sock.recv(65536) == b""  # the proxy closed it; no answer to wait on


def test_connections_past_the_cap_are_answered_503_at_once(upstream: Upstream) -> None:
    with proxy_on(upstream, limits=Limits(max_connections=2)).start() as proxy:
        port = port_of(proxy)
        # two silent clients hold both slots (their handlers wait on a request line)
        held = [socket.create_connection(("127.0.0.1", port), LIVENESS_SECONDS) for _ in "ab"]
        try:
            answer = parse(exchange(port, post(MESSAGES, body_of(claude("hi")))))
        finally:
            for sock in held:
                sock.close()
        assert answer.status == 503
        assert answer.headers["retry-after"] == "1"
        assert upstream.received == []


def test_a_body_past_the_limit_is_refused_before_it_is_held(upstream: Upstream) -> None:
    with proxy_on(upstream, limits=Limits(max_body=1024)).start() as proxy:
        announced = request(MESSAGES, b"", b"Content-Length: 4096")
        assert parse(exchange(port_of(proxy), announced, then_close=True)).status == 413
        chunk = b"x" * 600
        chunked = request(
            MESSAGES,
            b"%x\r\n%s\r\n%x\r\n%s\r\n" % (len(chunk), chunk, len(chunk), chunk),
            b"Transfer-Encoding: chunked",
        )
        assert parse(exchange(port_of(proxy), chunked, then_close=True)).status == 413
    assert upstream.received == []
    assert MAX_REQUEST_BYTES <= 64 * 1024 * 1024  # not a gibibyte parsed whole


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_a_keep_alive_cap_that_is_not_a_finite_amount_is_refused(value: str) -> None:
    if float(value) >= 0 or math.isnan(float(value)):
        with pytest.raises(ConfigurationError, match="finite number of dollars above 0"):
            Caps(conversation_usd=float(value))
    with socket.socket() as taken:  # were the cap taken, the proxy could not listen here
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for option in ("--keepalive-cap", "--keepalive-daily-cap"):
            args = ["proxy", "--upstream", "http://127.0.0.1:9", "--port", port, option, value]
            result = CliRunner().invoke(main, args)
            assert result.exit_code != 0
            assert "cannot listen" not in result.output
            assert "Traceback" not in result.output


# What goes upstream and comes back: numbers as written, hop-by-hop headers.


def test_a_number_goes_upstream_as_the_client_wrote_it(upstream: Upstream) -> None:
    raw = b'{"model": "claude-sonnet-4-6", "max_tokens": 64, "temperature": 1e400, '
    raw += b'"top_p": 0.10, "messages": [{"role": "user", "content": "hi"}]}'
    with proxy_on(upstream).start() as proxy:
        assert parse(exchange(port_of(proxy), post(MESSAGES, raw))).status == 200
    (received,) = upstream.received
    assert b'"temperature":1e400' in received.body
    assert b'"top_p":0.10' in received.body
    assert b"Infinity" not in received.body
    assert b"cache_control" in received.body  # the proxy did write the body anew


def hop_named(handler: UpstreamHandler) -> None:
    data = b'{"id": "m"}'
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Connection", "keep-alive, X-Edge-Hop")
    handler.send_header("X-Edge-Hop", "upstream-only")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def test_headers_the_upstream_names_hop_by_hop_are_not_relayed() -> None:
    with Upstream(hop_named) as upstream, proxy_on(upstream).start() as proxy:
        answer = parse(exchange(port_of(proxy), post(MESSAGES, body_of(claude("hi")))))
    assert answer.status == 200
    assert "x-edge-hop" not in answer.headers


# `warmloop proxy --status` against a server that is not the proxy.


class NotTheProxy(BaseHTTPRequestHandler):
    answer = b"{}"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(
    "answer",
    [b"{}", b"[" * 100_000 + b"]" * 100_000, b'{"conversations": "x", "by_conversation": 1}'],
    ids=["empty-object", "nested-100000", "wrong-shapes"],
)
def test_status_against_another_server_says_so(answer: bytes) -> None:
    handler = type("Handler", (NotTheProxy,), {"answer": answer})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = str(server.server_address[1])
        result = CliRunner().invoke(main, ["proxy", "--status", "--port", port])
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == 1
    assert "is not a warmloop proxy" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# Secrets: the banner, a refusal, the HTTP library's log records, telemetry.


def test_the_banner_never_shows_the_upstreams_credentials() -> None:
    command = [sys.executable, "-m", "warmloop", "proxy", "--port", "0", "--no-keepalive"]
    command += ["--upstream", f"http://user:{SECRET}@127.0.0.1:9/api"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as run:
        try:
            assert run.stdout is not None
            banner = run.stdout.readline().decode()
        finally:
            run.terminate()
            run.wait(LIVENESS_SECONDS)
    assert "proxying to http://***@127.0.0.1:9/api" in banner
    assert SECRET not in banner


def test_a_refusal_never_echoes_a_query_key(
    upstream: Upstream, capsys: pytest.CaptureFixture[str]
) -> None:
    # four words: http.server refuses it quoting the whole request line
    line = f"POST /v1beta/models/g:generateContent?key={SECRET} x HTTP/1.1".encode()
    with proxy_on(upstream).start() as proxy:
        reply = exchange(port_of(proxy), line + b"\r\n\r\n")
    printed = capsys.readouterr().err
    assert parse(reply).status == 400
    assert "Bad request syntax" in printed
    assert SECRET not in reply.decode("latin-1") + printed


def test_an_embedded_proxy_keeps_a_query_key_out_of_log_records(
    upstream: Upstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    path = f"/v1beta/models/gemini-2.5-flash:generateContent?key={SECRET}".encode()
    gemini = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with proxy_on(upstream).start() as proxy:
        assert parse(exchange(port_of(proxy), post(path, body_of(gemini)))).status == 200
    assert any("HTTP Request" in r.getMessage() for r in caplog.records)  # httpx2 logged it
    assert all(SECRET not in r.getMessage() for r in caplog.records)


def test_a_bust_on_a_span_carries_no_prompt_text_unless_content_capture_is_on(
    upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from warmloop.proxy.tracing import CAPTURE_CONTENT

    details = []
    for captured in ("", "true"):
        monkeypatch.setenv(CAPTURE_CONTENT, captured)
        exporter, provider = InMemorySpanExporter(), TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("test")
        with proxy_on(upstream, tracer=tracer).start() as proxy:
            first = claude("hi", metadata={"user_id": "u1"})
            first["system"] = "The private plan: acquire Initech."
            later = {**first, "system": "The private plan: acquire Initrode."}
            later["messages"] = [
                *first["messages"],
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "go on"},
            ]
            for sent in (first, later):
                assert parse(exchange(port_of(proxy), post(MESSAGES, body_of(sent)))).status
            assert proxy.wait_handled(2, LIVENESS_SECONDS)
        (span,) = exporter.get_finished_spans()
        (event,) = span.events
        assert event.attributes is not None
        details.append(str(event.attributes["warmloop.cache.bust.detail"]))
    assert "rode." not in details[0]  # where it moved, not what it said
    assert "rode." in details[1]


# Conversations: Codex's turn ids, 50 clients at once.


def test_codex_turn_ids_make_no_bust(upstream: Upstream) -> None:
    items: list[Any] = [{"role": "user", "content": "Fix the parser."}]
    with proxy_on(upstream).start() as proxy:
        for turn in range(3):
            codex = {
                "model": "gpt-5.5",
                "instructions": "You are Codex.",
                "input": list(items),
                "prompt_cache_key": "codex-session",
                "client_metadata": {"turn_id": f"turn-{turn}-{SECRET[-4:]}"},
            }
            raw = post(b"/v1/responses", body_of(codex))
            assert parse(exchange(port_of(proxy), raw)).status == 200
            items.append({"type": "function_call_output", "call_id": f"c{turn}", "output": "ok"})
        page = proxy.status()
    assert (page["conversations"], page["busts"]) == (1, 0)


def test_fifty_clients_at_once_are_fifty_conversations(upstream: Upstream) -> None:
    """The probe's 50 clients with 3 requests each, at once: they were filed as 52-68
    conversations, clients merged, with false `volatile-value` busts."""
    barrier = threading.Barrier(50, timeout=LIVENESS_SECONDS)
    upstream.reply = json_reply
    with proxy_on(upstream).start() as proxy:

        def client(n: int) -> None:
            messages: list[Any] = [
                {"role": "user", "content": f"Fix the failing test and report on case {n}"}
            ]
            for step in range(3):
                barrier.wait()
                raw = post(MESSAGES, body_of({**claude(""), "messages": messages}))
                assert parse(exchange(port_of(proxy), raw)).status == 200
                messages += [
                    {"role": "assistant", "content": f"step {step}"},
                    {"role": "user", "content": "go on"},
                ]

        with ThreadPoolExecutor(50) as pool:
            list(pool.map(client, range(50)))
        page = proxy.status()
    assert (page["conversations"], page["requests"], page["busts"]) == (50, 150, 0)
