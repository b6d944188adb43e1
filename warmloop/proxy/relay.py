"""The upstream's answer sent back to the client as it arrives: status, headers but the
hop-by-hop ones (those its own `Connection` header names too), and the raw body chunk by
chunk (chunked where the upstream gave no length), so server-sent events stream through
live; the first bytes are kept for reading usage."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler

import httpx2

from warmloop.exchange.response_facts import KEEP_BYTES
from warmloop.proxy.forwarding import HOP_BY_HOP, shown


def relay(
    handler: BaseHTTPRequestHandler, response: httpx2.Response, warn: Callable[[str], None]
) -> bytes | None:
    """Send the upstream's status, headers and raw body as it arrives; returns the body
    bytes kept for reading usage, or None when the upstream broke off."""
    handler.send_response_only(response.status_code, response.reason_phrase)
    length = response.headers.get("content-length")
    named = {
        token.strip().lower()
        for value in response.headers.get_list("connection")
        for token in value.split(",")
    }
    for key, value in response.headers.multi_items():
        if key.lower() not in HOP_BY_HOP and key.lower() not in named:
            handler.send_header(key, value)
    chunked = length is None and handler.command != "HEAD"
    if chunked:
        handler.send_header("Transfer-Encoding", "chunked")
    else:
        handler.send_header("Content-Length", length or "0")
    handler.end_headers()
    kept: list[bytes] = []
    size = 0
    wfile = handler.wfile
    try:
        for chunk in _raw(response):
            if size < KEEP_BYTES:
                kept.append(chunk)
                size += len(chunk)
            if chunked:
                wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            else:
                wfile.write(chunk)
            wfile.flush()
        if chunked:
            wfile.write(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True  # the client left; still log what came back
    except httpx2.HTTPError as exc:
        # The status line is out: an error response now would land inside this body.
        # Closing ends it short (no final chunk), which the client reads as a failure.
        handler.close_connection = True
        warn(
            f"the upstream broke off {handler.command} {shown(handler.path.split('?', 1)[0])} "
            f"after its status line ({type(exc).__name__}: {exc}); closed the connection"
        )
        return None
    return b"".join(kept)


def _raw(response: httpx2.Response) -> Iterator[bytes]:
    for chunk in response.iter_raw():
        if chunk:
            yield chunk
