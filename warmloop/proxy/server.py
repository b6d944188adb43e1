"""`warmloop proxy` and `warmloop record`: one loopback HTTP proxy for model requests.

Point a client's base URL at the proxy; every request goes to the upstream as it came
(method, path, query, headers but the hop-by-hop ones, body bytes), but for what the fixes
that are on add (`proxy.fixes`: cache markers, a routing key, a session header; `record`
has every fix off), and the response comes back as it arrives: status, headers and the raw
body, chunk by chunk, so server-sent events stream through live. With fixes on, or the live
guard, each model request is filed in its conversation (`proxy.conversations`) before it
goes, and a request that moves its conversation's prefix is reported at once (a line on
stderr and a `warmloop.proxy` log record) with its cause (`wire.guard`).
With a log file, model requests (`POST` to a Chat Completions, Responses, Messages
or Gemini `generateContent` / `streamGenerateContent` path) get one JSONL line appended
after the response ends: arrival time, when the answer's last byte went to the client
(`answered_at`, the proxy's clock), path (without the query, which may hold an API
key), status, the request body as forwarded, and the usage, response id and cache
diagnostics read from the response. Headers are never logged. With `diagnose` the
provider's own cache diagnostics are asked for on the way (`proxy.diagnose`: only for
api.anthropic.com and api.openai.com; any other upstream gets every request as sent).

The request target can only be a path on the upstream: the URL is the upstream's with the
target as its path, and a target that is no plain path (another host, control bytes, dot
segments) is refused, as is a body whose framing lies (see `Proxy` for what is refused).

A front end's limits: each read from a client waits `client_seconds` at most (a silent
connection is closed, a body that stops coming refused), a body is taken up to `max_body`
bytes (refused while reading past it), and `max_connections` connections are served at
once (one more is answered 503 at once). A model request asks its upstream for the content
codings the proxy reads (`forwarding.readable`: gzip, deflate, identity), so its usage is
never left unread. Credentials never leave: the upstream URL is shown redacted, the query
of a target never echoed, and the HTTP library's log records are filtered as the CLI's are
(`providers.redact.guard_logs`).
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2

from warmloop.errors import ConfigurationError
from warmloop.exchange import json_body
from warmloop.exchange.formats import format_from_path
from warmloop.exchange.log import LogWriter
from warmloop.exchange.response_facts import (
    READ_CODINGS,
    ResponseFacts,
    decoded,
    response_facts,
)
from warmloop.providers.records import WireFormat
from warmloop.providers.redact import MASK, guard_logs, redact_url, url_secrets
from warmloop.proxy.body import MAX_REQUEST_BYTES, BodyReader, Refusal
from warmloop.proxy.diagnose import Asked, Diagnoser, diagnosable
from warmloop.proxy.fixes import OFF, Fixes
from warmloop.proxy.forwarding import (
    check_upstream,
    connection_options,
    forwarded_headers,
    one_line,
    readable,
    shown,
    target_problem,
)
from warmloop.proxy.keepalive import Caps
from warmloop.proxy.live import Live
from warmloop.proxy.relay import relay
from warmloop.proxy.status import PAGE_PATH, STATUS_HTML, STATUS_PATH, Forwarded, status_page
from warmloop.proxy.tracing import global_tracer

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

CLIENT_SECONDS = 60.0
"""The longest a client may stay silent while the proxy reads its request (a request line,
headers, a body), and while an answer waits on it to read; past it the connection closes."""
MAX_CONNECTIONS = 512
"""Client connections served at once, by default (`--max-connections`)."""
UPSTREAM_READ_SECONDS = 600.0
"""The longest the upstream may stay silent, before its status line or inside a body, before
the exchange is given up: the official SDKs' own default, as a model that does not stream
sends nothing until its whole answer is done."""
UPSTREAM_CONNECT_SECONDS = 30.0
DRAIN_SECONDS = 10.0
"""The longest `close()` waits for requests in flight to be handled to the end (their log
line written): a client has its answer a moment before its line is written, so a proxy
stopped right after its client exits would lose the last line."""


class Proxy:
    """The proxy server; `start()` serves in a thread, `serve_forever()` in this one.

    Refused with a JSON error, one line on stderr and the connection closed: a target that is
    no path (400, see `target_problem`), a Content-Length that is not one decimal number or
    longer than the body (400), a bad chunked body (400), a body over MAX_REQUEST_BYTES
    (413), a transfer coding other than chunked (501). An upstream that fails before its
    status line is a 502, or a 504 after UPSTREAM_READ_SECONDS of silence; one that fails
    after it has its response ended by closing the connection.
    """

    def __init__(
        self,
        upstream: str,
        out: Path | None,
        *,
        port: int = 0,
        clock: Callable[[], float] = time.time,
        transport: httpx2.BaseTransport | None = None,
        diagnose: bool = False,
        fixes: Fixes = OFF,
        guard: bool = False,
        keepalive: Caps | None = None,
        tick_thread: bool = True,
        tracer: Tracer | None = None,
        name: str = "warmloop record",
        limits: Limits | None = None,
        affinity: float | None = None,
    ) -> None:
        self.upstream = check_upstream(upstream)
        guard_logs(url_secrets(self.upstream))  # httpx2 logs each request's URL, query and all
        self.limits = limits or Limits()
        self.fixes = fixes
        self.name = name
        wire = diagnosable(self.upstream) if diagnose else None
        self.diagnoser = Diagnoser(wire) if wire is not None else None
        """Asks the provider for its cache verdict (None: every request goes as sent)."""
        self._base = httpx2.URL(self.upstream)
        self._base_path = self._base.raw_path.rstrip(b"/")
        self.clock = clock
        self.writer = LogWriter(out) if out is not None else None
        self.client = _upstream_client(transport)
        on = fixes.any or guard or keepalive is not None
        self.live = (
            Live(
                self.upstream,
                fixes,
                keepalive,
                self.client,
                clock,
                self.warn,
                tracer or global_tracer(),
                affinity,
            )
            if on
            else None
        )
        """Each model request's conversation, the fixes and the keep-alives (`proxy.live`;
        None: `record`, which files none)."""
        self.conversations = self.live.conversations if self.live is not None else None
        self.keepalives = self.live.keepalives if self.live is not None else None
        """Keeps conversations warm through pauses (None: `--no-keepalive`, `record`); its
        thread sends them when due (`tick_thread` False: a test calls `tick()` itself)."""
        self._tick_thread = tick_thread
        self.server = self._listen(port)
        self.server.warn = self.warn
        self._thread: threading.Thread | None = None
        self._handled = threading.Condition()
        self.handled = 0
        self.in_flight = 0
        """Requests begun and not yet handled to the end."""
        """Requests handled to the end (their answer relayed, its usage filed, the log
        line written): the client has its answer a moment before."""

    def _listen(self, port: int) -> _Server:
        """The server on 127.0.0.1:`port`, its handlers bound to this proxy and its limits;
        a `ConfigurationError` (the log closed) when the port is taken."""
        handler = type(
            "Handler", (_Handler,), {"recorder": self, "timeout": self.limits.client_seconds}
        )
        try:
            return _Server(("127.0.0.1", port), handler, self.limits.max_connections)
        except OSError as exc:
            if self.writer is not None:
                self.writer.close()
            raise ConfigurationError(
                f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pass another --port"
            ) from exc

    @property
    def url(self) -> str:
        """The proxy's base URL (give it to the client, with the API's path prefix)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def shown_upstream(self) -> str:
        """The upstream as it may be shown: user info and query values redacted."""
        return redact_url(self.upstream)

    def start(self) -> Proxy:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        if self.keepalives is not None and self._tick_thread:
            self.keepalives.start()
        return self

    def serve_forever(self) -> None:
        """Serve until interrupted."""
        if self.keepalives is not None and self._tick_thread:
            self.keepalives.start()
        self.server.serve_forever()

    def close(self) -> None:
        """Stop serving, drop what the keep-alives held, wait for the requests in flight to
        be logged (at most DRAIN_SECONDS), and close the log."""
        if self.keepalives is not None:
            self.keepalives.close()
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
        self._drained()
        self.server.server_close()
        self.client.close()
        if self.writer is not None:
            self.writer.close()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def note_begun(self) -> None:
        """One more request in flight."""
        with self._handled:
            self.in_flight += 1

    def note_handled(self) -> None:
        """One more request handled to the end."""
        with self._handled:
            self.handled += 1
            self.in_flight -= 1
            self._handled.notify_all()

    def _drained(self) -> None:
        """Wait, at most DRAIN_SECONDS, for the requests in flight to be handled to the end,
        saying so where there are any; those still in flight then go unlogged."""
        with self._handled:
            if self.in_flight:
                self.warn(
                    f"closing: waiting up to {DRAIN_SECONDS:.0f} s for {self.in_flight} "
                    "request(s) in flight to be logged"
                )
            if not self._handled.wait_for(lambda: self.in_flight <= 0, DRAIN_SECONDS):
                self.warn(f"closed with {self.in_flight} request(s) in flight: not logged")

    def wait_handled(self, count: int, timeout: float) -> bool:
        """Wait until `count` requests have been handled to the end (a test reads their
        figures); False after `timeout` seconds."""
        with self._handled:
            return self._handled.wait_for(lambda: self.handled >= count, timeout)

    def record(self, entry: dict[str, Any]) -> None:
        """Append one request's line to the log (when there is one)."""
        if self.writer is not None:
            self.writer.write(entry)

    def warn(self, message: str) -> None:
        """Say on stderr, in one line, what became of a request not passed on whole."""
        sys.stderr.write(f"{self.name}: {one_line(message)}\n")
        sys.stderr.flush()

    def status(self) -> dict[str, Any]:
        """The status page's figures (`proxy.status`)."""
        return self.live.status() if self.live is not None else status_page([])

    def upstream_url(self, target: str) -> httpx2.URL:
        """The upstream's URL with `target` as its path (under the upstream's own path)."""
        problem = target_problem(target)
        if problem is not None:
            path = target.split("?", 1)[0]  # a query may hold an API key
            raise Refusal(400, f"the request target {shown(path)} is not a path: {problem}")
        return self._base.copy_with(raw_path=self._base_path + target.encode("ascii"))


def _upstream_client(transport: httpx2.BaseTransport | None) -> httpx2.Client:
    """The one client the proxy sends every request upstream with: no environment proxies,
    no cookies (one client's Set-Cookie is never sent for another), and no headers of its
    own (no Accept-Encoding or User-Agent: the client's are forwarded)."""
    client = httpx2.Client(
        timeout=httpx2.Timeout(UPSTREAM_READ_SECONDS, connect=UPSTREAM_CONNECT_SECONDS),
        transport=transport,
        trust_env=False,
        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
    )
    client.headers.clear()
    return client


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    """Connections the kernel holds before they are accepted (http.server's 5 made a
    burst of clients wait seconds on SYN retries)."""
    warn: Callable[[str], None]

    def __init__(self, address: tuple[str, int], handler: type, slots: int) -> None:
        super().__init__(address, handler)
        self.slots = threading.BoundedSemaphore(slots)
        self.cap = slots

    def process_request(self, request: Any, client_address: Any) -> None:
        # past the cap: a 503 at once, so the accept loop never waits on a slot
        if not self.slots.acquire(blocking=False):
            self.warn(f"503 for a connection: {self.cap} are open (--max-connections)")
            _busy(request, self.cap)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # the last resort for a request no handler answered: one line, not a traceback
        error = sys.exc_info()[1]
        self.warn(f"dropped a connection: {type(error).__name__}: {error}")


QUERY_VALUE = re.compile(r"([?&][^=\s&?'\"]*=)[^&\s'\"]*")
"""A query's value in a message (http.server's own refusals quote the request line)."""
PAGES = (STATUS_PATH, PAGE_PATH)
"""The proxy's own pages: no provider's API has these paths."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head, each chunk and the last chunk are separate writes: with Nagle's algorithm
    # on, a keep-alive client's delayed ACK held the rest of every answer for 40 ms.
    disable_nagle_algorithm = True
    recorder: Proxy

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the log file is the record; the console stays quiet

    def do_POST(self) -> None:
        self.recorder.note_begun()
        try:
            self._proxy()
        finally:
            self.recorder.note_handled()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_POST

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # http.server's own refusals (a malformed request line, an unknown method) in JSON too
        self._refuse(code, message or self.responses.get(code, ("refused",))[0])

    def _refuse(self, status: int, message: str) -> None:
        """Answer `status` with a JSON error, say so on stderr, and close the connection (a
        body that was not read whole leaves the stream at no request boundary). A query's
        values (an API key in `?key=`) are never echoed."""
        message = QUERY_VALUE.sub(lambda found: found.group(1) + MASK, message)
        method = self.command or "request"
        path = (getattr(self, "path", "") or "").split("?", 1)[0]
        self.recorder.warn(f"{status} for {method} {shown(path)}: {message}")
        body = json.dumps({"error": {"message": f"{self.recorder.name}: {message}"}}).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")  # http.server closes after sending it
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _answer(self, status: int, page: dict[str, Any]) -> None:
        """Answer the proxy's own page as JSON."""
        body = json.dumps(page, indent=2).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _target(self) -> str:
        # as sent: http.server folds a leading `//` of `self.path` into one `/`
        words = self.requestline.split()
        return words[1] if len(words) >= 2 else self.path

    def _proxy(self) -> None:
        recorder = self.recorder
        target = self._target()
        if self.command == "GET" and target in PAGES:
            self._page(target)
            return
        arrived = recorder.clock()
        started = time.perf_counter()
        untouched = untouched_target(target)
        target = untouched if untouched is not None else target
        try:
            # read whole first, so a refusal leaves nothing unread
            body = BodyReader(self.rfile, self.headers, recorder.limits.max_body).read()
            url = recorder.upstream_url(target)
        except Refusal as refusal:
            self._refuse(refusal.status, refusal.message)
            return
        headers = forwarded_headers(self.headers)
        if "close" in connection_options(self.headers):
            self.close_connection = True  # http.server sees `close` only as the whole value
        path = target.split("?", 1)[0]
        wire = format_from_path(path) if self.command == "POST" else None
        sent: Forwarded | None = None
        if wire is not None and untouched is None:
            headers = readable(headers)  # its usage is read: ask for what the proxy reads
            if recorder.live is not None and (request := _object(body)) is not None:
                sent = recorder.live.place(wire, request, headers, path)
                headers = sent.headers
                body = sent.body if sent.body is not None else body
        asked = (
            recorder.diagnoser.ask(self.command, path, headers, body)
            if (recorder.diagnoser is not None and untouched is None)
            else None
        )
        going = (asked.headers, asked.body) if asked is not None else (headers, body)
        answer = self._exchanged(url, *going)
        if answer is None or wire is None:
            return
        facts, status, answered, streamed = answer
        self._filed(wire, sent, asked, (url, body, status), facts, path)
        seconds = round(time.perf_counter() - started, 4)
        self._logged(going[1], path, (arrived, answered, seconds), status, facts, streamed)

    def _page(self, target: str) -> None:
        """Answer one of the proxy's own pages: the status as JSON, or as a live HTML page."""
        if target == STATUS_PATH:
            self._answer(200, self.recorder.status())
            return
        data = STATUS_HTML.encode()
        self.send_response_only(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _exchanged(
        self, url: httpx2.URL, headers: list[tuple[str, str]], body: bytes
    ) -> tuple[ResponseFacts, int, float, bool] | None:
        """Send the request upstream and relay its answer; what the answer says (its facts,
        status, when its last byte went out, whether it streamed), or None when it failed
        or broke off (the client was told)."""
        recorder = self.recorder
        try:
            with recorder.client.stream(
                self.command, url, headers=headers, content=body
            ) as response:
                kept = relay(self, response, recorder.warn)
                answered = recorder.clock()  # the last byte is out
                status = response.status_code
                content_type = response.headers.get("content-type", "")
                encoding = response.headers.get("content-encoding", "")
        except httpx2.HTTPError as exc:
            timed_out = isinstance(exc, httpx2.TimeoutException)
            self._refuse(504 if timed_out else 502, f"upstream: {type(exc).__name__}: {exc}")
            return None
        if kept is None:
            return None
        if encoding.strip().lower() not in ("", *READ_CODINGS):
            recorder.warn(f"read no usage: the upstream answered in {shown(encoding)}")
        facts = response_facts(decoded(kept, encoding), content_type)
        return facts, status, answered, "event-stream" in content_type

    def _filed(
        self,
        wire: WireFormat,
        sent: Forwarded | None,
        asked: Asked | None,
        exchange: tuple[httpx2.URL, bytes, int],
        facts: ResponseFacts,
        path: str,
    ) -> None:
        """File an answered model request's usage in its conversation (its pause starts),
        trace its bust, and remember its response for `--diagnose`."""
        recorder = self.recorder
        if recorder.live is not None and sent is not None:
            if facts.usage is not None:
                recorder.live.answered(wire, sent, exchange, path, facts.usage, facts.asked_tool)
            asked_for = facts.diagnostics if asked is not None else None
            recorder.live.traced(wire, sent, path, asked_for)
        if recorder.diagnoser is not None and asked is not None and exchange[2] < 400:
            recorder.diagnoser.answered(asked, facts.response_id)

    def _logged(
        self,
        body: bytes,
        path: str,
        times: tuple[float, float, float],
        status: int,
        facts: ResponseFacts,
        streamed: bool,
    ) -> None:
        """Append the request's line to the log, when there is one (`times`: when it
        arrived, when its answer's last byte went out, the seconds it took)."""
        recorder = self.recorder
        if recorder.writer is None:
            return
        try:
            request = json.loads(body)
        except ValueError:
            return
        except RecursionError:  # the audit could not read it either: say so, once
            recorder.warn(f"logged nothing for {path}: its request body nests too deeply")
            return
        if not isinstance(request, dict):
            return
        arrived, answered, seconds = times
        recorder.record(
            {
                "at": arrived,
                "method": self.command,
                "path": path,
                "status": status,
                "stream": streamed,
                "seconds": seconds,
                "body": request,
                "usage": facts.usage,
                "diagnostics": facts.diagnostics,
                "response_id": facts.response_id,
                "answered_at": answered,
            }
        )


UNTOUCHED = "/untouched"
"""A route whose requests go upstream exactly as the client wrote them (no marker, key,
header or narrowed encoding; filed in no conversation): a client pointed at
`http://127.0.0.1:8788/untouched` bypasses every fix, its path sent without the prefix."""


def untouched_target(target: str) -> str | None:
    """The target without the untouched route's prefix, or None when it is not on it."""
    if target == UNTOUCHED or target.startswith((UNTOUCHED + "/", UNTOUCHED + "?")):
        rest = target[len(UNTOUCHED) :]
        return rest if rest.startswith("/") else "/" + rest
    return None


@dataclass(frozen=True)
class Limits:
    """A front end's limits (see the module docstring): each read from a client waits
    `client_seconds` at most, a body is taken up to `max_body` bytes, and `max_connections`
    client connections are served at once."""

    client_seconds: float = CLIENT_SECONDS
    max_body: int = MAX_REQUEST_BYTES
    max_connections: int = MAX_CONNECTIONS

    def __post_init__(self) -> None:
        for name, value in (
            ("the client timeout", self.client_seconds),
            ("the body limit", self.max_body),
            ("the connection cap", self.max_connections),
        ):
            if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
                raise ConfigurationError(f"{name} must be a finite number above 0, got {value!r}")


def _busy(request: Any, cap: int) -> None:
    """Answer a connection past the cap with a 503, without reading it."""
    message = f"warmloop proxy: {cap} connections are open; retry"
    body = json.dumps({"error": {"message": message}}).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    )
    try:
        request.settimeout(1.0)
        request.sendall(head.encode() + body)
    except OSError:
        pass  # it left: nothing to say


def _object(body: bytes) -> dict[str, Any] | None:
    """A request body as a JSON object, or None (not JSON, not an object, nested too deep:
    such a request goes upstream as sent, to be answered with the upstream's own error)."""
    try:
        found = json_body.loads(body)
    except (ValueError, RecursionError):
        return None
    return found if isinstance(found, dict) else None
