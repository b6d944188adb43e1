"""Credentials in a server's base URL, kept out of everything warmloop shows or saves.

`openai-compatible:https://user:pass@host/v1?token=abc#model` works (the client sends them),
but the model's name (saved in every transcript and session), provider errors and the CLI
banner show `https://***@host/v1?token=***` instead: user info and query values are
redacted, whatever their names.

The HTTP libraries and SDKs log too: httpx's INFO line prints each request's URL, query
included, and the SDKs' DEBUG lines print request options. `guard_logs` puts one filter on
every logger of theirs that can print a URL, wherever warmloop builds a client or sends a
request; it rewrites a record's text (and its traceback) with every URL's credentials
redacted and every secret it was told of masked, so no log record holds a credential.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

MASK = "***"
URL_LOGGERS = (
    "httpx",
    "httpx2",
    *(
        f"{core}.{part}"
        for core in ("httpcore", "httpcore2")
        for part in ("connection", "http11", "http2", "proxy", "socks")
    ),
    "openai",
    "openai._base_client",
    "anthropic",
    "anthropic._base_client",
    "google_genai._api_client",
)
"""The loggers of the HTTP libraries and SDKs that can print a request's URL or options (a
filter on a logger sees only the records made by that logger, not by its children)."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _parts(url: str) -> tuple[str, list[str]]:
    """The redacted URL and the secret strings it held (as written and decoded)."""
    try:
        split = urlsplit(url)
        host = split.hostname or ""
        port = f":{split.port}" if split.port is not None else ""
    except ValueError:  # a malformed port or bracket: show nothing that could be secret
        return MASK, [url]
    secrets: list[str] = []
    netloc = split.netloc
    if "@" in netloc:
        userinfo = netloc.rpartition("@")[0]
        secrets += [userinfo, *userinfo.split(":")]
        netloc = f"{MASK}@{host}{port}" if ":" not in host else f"{MASK}@[{host}]{port}"
    query = split.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        secrets += [value for _, value in pairs]
        secrets += [part.partition("=")[2] for part in query.split("&")]
        query = "&".join(f"{name}={MASK}" for name, _ in pairs) or MASK
    found = [s for s in secrets if s]
    found += [unquote(s) for s in found]
    return urlunsplit((split.scheme, netloc, split.path, query, split.fragment)), found


def redact_url(url: str) -> str:
    """`url` with its user info and query values replaced by `***`."""
    return _parts(url)[0] if ("@" in url or "?" in url) else url


def url_secrets(url: str) -> tuple[str, ...]:
    """The credentials in `url` (user info, query values), longest first, for `scrub`."""
    if "@" not in url and "?" not in url:
        return ()
    return tuple(sorted(set(_parts(url)[1]), key=len, reverse=True))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret replaced by `***` (longest first, so none survives in part)."""
    for secret in secrets:
        if len(secret) >= 3:  # a one- or two-letter value would mask ordinary words
            text = text.replace(secret, MASK)
    return text


def redact_spec(spec: str) -> str:
    """A model selection string as it may be shown: a server URL's credentials redacted."""
    prefix, sep, rest = spec.partition(":")
    if not sep or ("@" not in rest and "?" not in rest):
        return spec
    url, hash_sign, model = rest.partition("#")
    return f"{prefix}:{redact_url(url.strip())}{hash_sign}{model}"


class CredentialFilter(logging.Filter):
    """Rewrites a record's text with URL credentials redacted and known secrets masked."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def add(self, secrets: Iterable[str]) -> None:
        """Mask `secrets` too (a client's key, its base URL's credentials) from now on."""
        with self._lock:
            known = set(self._secrets) | {s for s in secrets if s}
            self._secrets = tuple(sorted(known, key=len, reverse=True))

    def clean(self, text: str) -> str:
        """`text` with every URL's credentials redacted and every known secret masked."""
        text = _URL.sub(lambda found: redact_url(found.group()), text)
        return scrub(text, self._secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: its handler says so
            return True
        cleaned = self.clean(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # The exception's text can hold the URL: format it now, cleaned, so handlers
            # use this text instead of formatting the exception again.
            record.exc_text = self.clean(logging.Formatter().formatException(record.exc_info))
        return True


_FILTER = CredentialFilter()


def guard_logs(secrets: Iterable[str] = ()) -> None:
    """Keep credentials out of every record the URL-printing loggers make (idempotent),
    masking `secrets` as well."""
    _FILTER.add(secrets)
    for name in URL_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
