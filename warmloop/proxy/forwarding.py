"""What the recorder sends upstream: the upstream's base URL, a request target that can only
be a path on it, and the request's headers less the hop-by-hop ones; and how a client's
string is quoted in a message."""

from __future__ import annotations

import re
from email.message import Message
from urllib.parse import unquote, urlsplit

import httpx2

from warmloop.errors import ConfigurationError
from warmloop.exchange.response_facts import READ_CODINGS

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
PRINTABLE_ASCII = re.compile(r"[!-~]*")


def check_upstream(url: str) -> str:
    """The upstream base URL without a trailing slash; anything but http(s) is an error."""
    parts = urlsplit(url)
    problem = parts.scheme not in {"http", "https"} or not parts.netloc
    if not problem:
        try:
            httpx2.URL(url)
        except httpx2.InvalidURL:
            problem = True
    if problem or parts.query or parts.fragment:
        raise ConfigurationError(
            "--upstream must be an http(s) URL without a query, such as "
            f"https://api.openai.com, got {url!r}"
        )
    return url.rstrip("/")


def target_problem(target: str) -> str | None:
    """Why a request target is no path on the upstream, or None when it is one: a path
    starts with a single `/`, holds printable ASCII only, and no backslash or `.` or `..`
    segment (percent-encoded or not), so it can never name another host or leave the
    upstream's base path."""
    if not target.startswith("/") or target.startswith("//"):
        return "it must be a path that starts with a single '/'"
    if not PRINTABLE_ASCII.fullmatch(target):
        return "it holds a control byte, a space or a non-ASCII character"
    path = unquote(target.split("?", 1)[0])
    if "\\" in path:
        return "it holds a backslash"
    if any(segment in {".", ".."} for segment in path.split("/")):
        return "it holds a '.' or '..' segment"
    return None


def connection_options(headers: Message) -> set[str]:
    """The Connection header's options, lower-cased (`close`, and hop-by-hop header names)."""
    return {
        token.strip().lower()
        for value in headers.get_all("Connection", [])
        for token in value.split(",")
    }


def forwarded_headers(headers: Message) -> list[tuple[str, str]]:
    """The request's headers as sent, less hop-by-hop ones (those the Connection header
    names too), Host and Content-Length (the upstream connection sets its own)."""
    hop = HOP_BY_HOP | connection_options(headers)
    return [(k, v) for k, v in headers.items() if k.lower() not in hop]


def readable(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`headers` with Accept-Encoding narrowed to the content codings a response is read in
    (`exchange.response_facts.READ_CODINGS`: gzip, deflate, identity), each with its
    q-value: an answer in br or zstd would leave its usage unread (no figures, no
    keep-alive), and the client takes what it listed. `*` stands for those three; with none
    left, identity."""
    out: list[tuple[str, str]] = []
    for name, value in headers:
        if name.lower() != "accept-encoding":
            out.append((name, value))
            continue
        kept: list[str] = []
        for part in value.split(","):
            coding = part.split(";", 1)[0].strip().lower()
            if coding == "*":
                kept += [f"{c}{part.strip()[1:]}" for c in READ_CODINGS if c != "identity"]
            elif coding in READ_CODINGS or coding == "x-gzip":
                kept.append(part.strip())
        out.append((name, ", ".join(dict.fromkeys(kept)) or "identity"))
    return out


def one_line(text: str) -> str:
    """`text` with line breaks and other unprintable characters escaped (`\\x1b`)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def shown(text: str, limit: int = 80) -> str:
    """A client's string quoted for a message, escaped and cut to `limit` characters."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")
