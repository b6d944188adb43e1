"""A request body read off the client's connection, whole, as its framing says: one
decimal Content-Length, or chunked; anything else is a `Refusal` the proxy answers itself
(see `Proxy` for the statuses). Memory follows the bytes that came, not the length
announced, and never passes the limit (`MAX_REQUEST_BYTES`, `--max-body-mb`): a body
announced longer is refused before a byte of it is read, a chunked one as soon as its
chunks pass it. A client that stops sending mid-body is refused once the connection's read
timeout passes (408)."""

from __future__ import annotations

import re
from email.message import Message
from io import BufferedIOBase

from warmloop.proxy.forwarding import shown

MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""The largest request body taken by default (64 MiB, above the providers' limits:
Anthropic's 32 MB, Gemini's 20 MB inline); a bigger one is refused with 413 rather than
held in memory and parsed."""
READ_BLOCK = 1024 * 1024
"""A request body is read in blocks this size, so memory follows the bytes that came, not
the length announced."""
MAX_LINE = 64 * 1024
"""The longest chunk-size or trailer line of a chunked request body."""
MAX_TRAILERS = 100
DIGITS = re.compile(r"[0-9]+")
HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


class Refusal(Exception):
    """A request the proxy answers itself, with this status, instead of passing it on."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class BodyReader:
    """Reads one request's body from `rfile` by what `headers` say of its framing."""

    def __init__(
        self, rfile: BufferedIOBase, headers: Message, limit: int = MAX_REQUEST_BYTES
    ) -> None:
        self.rfile = rfile
        self.headers = headers
        self.limit = limit

    def read(self) -> bytes:
        """The whole body, as its framing says; `Refusal` when the framing lies, the body
        passes the limit or stops coming."""
        try:
            return self._read()
        except TimeoutError as exc:
            raise Refusal(408, "the body stopped coming before its end; send it whole") from exc

    def _read(self) -> bytes:
        codings = self.headers.get_all("Transfer-Encoding")
        if codings:
            if [c.strip().lower() for c in codings] != ["chunked"]:
                given = ", ".join(codings)
                raise Refusal(501, f"Transfer-Encoding {shown(given)}: only chunked is taken")
            return self._chunked()
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            return b""
        if len(lengths) > 1 or not DIGITS.fullmatch(lengths[0].strip(" \t")):
            given = ", ".join(lengths)
            raise Refusal(
                400, f"Content-Length must be one decimal number of bytes, got {shown(given)}"
            )
        length = int(lengths[0])
        if length > self.limit:
            raise Refusal(
                413, f"the body ({length} bytes) is over {self.limit} bytes (--max-body-mb)"
            )
        return self._exactly(length, "the body ended before its Content-Length")

    def _exactly(self, size: int, short: str) -> bytes:
        parts: list[bytes] = []
        left = size
        while left:
            part = self.rfile.read(min(left, READ_BLOCK))
            if not part:
                raise Refusal(400, f"{short} ({size - left} of {size} bytes came)")
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def _line(self, what: str) -> bytes:
        line = self.rfile.readline(MAX_LINE + 1)
        if not line.endswith(b"\n"):
            raise Refusal(400, f"the chunked body's {what} is cut off or over {MAX_LINE} bytes")
        return line

    def _chunked(self) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            text = self._line("chunk size line").split(b";", 1)[0].strip(b" \t\r\n")
            if not HEX.fullmatch(text):
                given = text.decode("latin-1")
                raise Refusal(400, f"a chunk size must be hexadecimal, got {shown(given)}")
            size = int(text, 16)
            total += size
            if total > self.limit:
                raise Refusal(413, f"the chunked body is over {self.limit} bytes (--max-body-mb)")
            if size == 0:
                break
            chunks.append(self._exactly(size, "a chunk ended early"))
            if self._line("chunk end") not in (b"\r\n", b"\n"):
                raise Refusal(400, "a chunk is longer than its size says")
        for _ in range(MAX_TRAILERS):
            if self._line("trailer") in (b"\r\n", b"\n"):
                return b"".join(chunks)
        raise Refusal(400, f"the chunked body has over {MAX_TRAILERS} trailer lines")
