"""What came over the wire, judged: a reply cut short is not a server that cannot be reached
(the fix is a proxy or an overloaded server, not a URL), and a 200 whose body is not JSON
(an HTML page, a stream, a truncated body) is named as such, not parsed into a traceback."""

from __future__ import annotations

import contextlib
import importlib
import json
from typing import Any

from warmloop.errors import ProviderError

_CUT_SHORT = ("RemoteProtocolError", "ReadError")
"""httpx / httpx2 errors for a connection that broke while the reply was being read
("peer closed connection without sending complete message body")."""
_HTTP_MODULES = ("httpx2", "httpx")


def _cut_short_types() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module_name in _HTTP_MODULES:
        with contextlib.suppress(ImportError):
            module = importlib.import_module(module_name)
            found.extend(getattr(module, name) for name in _CUT_SHORT)
    return tuple(found)


def causes(exc: BaseException) -> list[BaseException]:
    """`exc` and the chain of exceptions behind it, outermost first (no cycles)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def broken_reply(exc: BaseException) -> str | None:
    """A sentence for a reply whose connection broke before its body was complete, or None
    when the failure was something else (no connection, a timeout)."""
    cut = _cut_short_types()
    for cause in causes(exc):
        if cut and isinstance(cause, cut):
            return (
                f"the connection closed before the whole reply arrived ({cause}), retries "
                "included; the server or a proxy in between cut it short: check its logs "
                "and limits, or try again"
            )
    return None


def not_json(content: bytes | str, name: str) -> ProviderError:
    """The error for a reply body that is not JSON, saying what it looks like instead."""
    head = content[:60]
    start = (head.decode("utf-8", "replace") if isinstance(head, bytes) else head).strip()
    if start.startswith("data:"):
        hint = "a server-sent event stream: do not set stream=True in params"
    elif start.startswith("<"):
        hint = "an HTML page: the base URL probably points at a web page or a proxy"
    elif not start:
        hint = "it is empty"
    else:
        hint = "cut short or not JSON"
    return ProviderError(
        f"{name}: malformed reply: the body is not JSON ({hint}; it starts {start!r})"
    )


def read_body(content: bytes, name: str) -> dict[str, Any]:
    """The reply body as a JSON object; a ProviderError saying what came instead."""
    try:
        body = json.loads(content)
    except (ValueError, RecursionError) as exc:
        raise not_json(content, name) from exc
    if not isinstance(body, dict):
        shape = "null" if body is None else f"a JSON {type(body).__name__}"
        raise ProviderError(f"{name}: malformed reply: the body is {shape}, not an object")
    return body
