"""The recorder: a loopback HTTP proxy that forwards model requests unchanged and logs them.

Point a client's base URL at the proxy; every request goes to the upstream as it came
(method, path, query, headers but the hop-by-hop ones, body bytes), and the response comes
back as it arrives: status, headers and the raw body, chunk by chunk, so server-sent events
stream through live. For model requests (`POST` to a Chat Completions, Responses, Messages
or Gemini `generateContent` / `streamGenerateContent` path) one JSONL line is appended
after the response ends: arrival time, path (without the query, which may hold an API
key), status, the request body, and the usage and cache diagnostics read from the
response. Headers are never logged.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

from warmloop.audit.formats import format_from_path
from warmloop.audit.log import LogWriter
from warmloop.audit.responses import response_facts
from warmloop.errors import ConfigurationError

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
KEEP_BYTES = 64 * 1024 * 1024
"""Response bytes kept for reading usage (the body is forwarded whole regardless)."""


def check_upstream(url: str) -> str:
    """The upstream base URL without a trailing slash; anything but http(s) is an error."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ConfigurationError(
            f"--upstream must be an http(s) URL such as https://api.openai.com, got {url!r}"
        )
    return url.rstrip("/")


def _decoded(data: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in {"gzip", "deflate"}:
        try:
            return zlib.decompressobj(47).decompress(data)  # 47: gzip or zlib header
        except zlib.error:
            return b""
    return data if encoding in {"", "identity"} else b""


class Recorder:
    """The proxy server; `start()` serves in a thread, `serve_forever()` in this one."""

    def __init__(
        self,
        upstream: str,
        out: Path,
        *,
        port: int = 0,
        clock: Callable[[], float] = time.time,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self.upstream = check_upstream(upstream)
        self.clock = clock
        self.writer = LogWriter(out)
        self.client = httpx2.Client(
            timeout=httpx2.Timeout(600.0, connect=30.0), transport=transport, trust_env=False
        )
        handler = type("Handler", (_Handler,), {"recorder": self})
        try:
            self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        except OSError as exc:
            self.writer.close()
            raise ConfigurationError(
                f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pass another --port"
            ) from exc
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The proxy's base URL (give it to the client, with the API's path prefix)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Recorder:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve until interrupted."""
        self.server.serve_forever()

    def close(self) -> None:
        """Stop serving and close the log."""
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
        self.server.server_close()
        self.client.close()
        self.writer.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, entry: dict[str, Any]) -> None:
        """Append one request's line to the log."""
        self.writer.write(entry)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    recorder: Recorder

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the log file is the record; the console stays quiet

    def do_POST(self) -> None:
        self._proxy()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_POST

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _proxy(self) -> None:
        recorder = self.recorder
        arrived = recorder.clock()
        started = time.perf_counter()
        body = self._body()
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        try:
            with recorder.client.stream(
                self.command, recorder.upstream + self.path, headers=headers, content=body
            ) as response:
                kept = self._relay(response)
                status = response.status_code
                content_type = response.headers.get("content-type", "")
                encoding = response.headers.get("content-encoding", "")
        except httpx2.HTTPError as exc:
            message = json.dumps({"error": {"message": f"warmloop record: upstream: {exc}"}})
            self._reply(502, message.encode())
            return
        path = self.path.split("?", 1)[0]
        if self.command != "POST" or format_from_path(path) is None:
            return
        try:
            request = json.loads(body)
        except ValueError:
            return
        if not isinstance(request, dict):
            return
        facts = response_facts(_decoded(kept, encoding), content_type)
        recorder.record(
            {
                "at": arrived,
                "method": self.command,
                "path": path,
                "status": status,
                "stream": "event-stream" in content_type,
                "seconds": round(time.perf_counter() - started, 4),
                "body": request,
                "usage": facts.usage,
                "diagnostics": facts.diagnostics,
            }
        )

    def _relay(self, response: httpx2.Response) -> bytes:
        """Send the upstream's status, headers and raw body as it arrives; returns the body
        bytes kept for reading usage."""
        self.send_response_only(response.status_code, response.reason_phrase)
        length = response.headers.get("content-length")
        for key, value in response.headers.multi_items():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        chunked = length is None and self.command != "HEAD"
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", length or "0")
        self.end_headers()
        kept: list[bytes] = []
        size = 0
        try:
            for chunk in _raw(response):
                if size < KEEP_BYTES:
                    kept.append(chunk)
                    size += len(chunk)
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    self.wfile.write(chunk)
                self.wfile.flush()
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client left; still log what came back
        return b"".join(kept)

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _raw(response: httpx2.Response) -> Iterator[bytes]:
    for chunk in response.iter_raw():
        if chunk:
            yield chunk
