"""How a request fails, said once for every provider.

Every failure of a request ends as one `ProviderError`, by one ladder:
1. a rejection of a prompt longer than the context window is `ContextWindowExceeded`
   (`overflow`), whatever its status;
2. an HTTP status says what went wrong (`status_kind`): 401 and 403 the key, 429 a rate
   limit, 408, 409 and 5xx a server that kept failing, any other status a request to fix;
3. without a status: no answer in time, a reply cut short, no connection, or a request the
   SDK itself refused.
The kinds that may pass on a later attempt are `RETRIED`: the OpenAI and Anthropic SDKs
retry them themselves, Gemini's retries are warmloop's (`gemini_retry`). One sentence per
kind says what happened and what to do. A provider gives only what differs: its SDK's
exception classes (`SdkErrors`), its name, its key variable and the credentials no message
may show; a message that held one is raised without the SDK's exception behind it, which
holds it too. A reply body that is not JSON is named for what it looks like.
"""

from __future__ import annotations

import contextlib
import email.utils
import enum
import functools
import importlib
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn

from warmloop.errors import (
    ContextWindowExceeded,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
)
from warmloop.providers.overflow import context_overflow
from warmloop.providers.redact import scrub
from warmloop.testing import check_allow_model_requests


class Kind(enum.Enum):
    """What went wrong with a request, as far as warmloop acts on it."""

    KEY = "the API key or its access"
    REJECTED = "a request the API will not take"
    RATE_LIMITED = "a rate limit or quota"
    SERVER = "a server that kept failing"
    TIMEOUT = "no answer in time"
    CUT_SHORT = "a reply cut short"
    UNREACHABLE = "no connection"
    REFUSED = "a request the SDK refused"


RETRIED = frozenset(
    {Kind.RATE_LIMITED, Kind.SERVER, Kind.TIMEOUT, Kind.CUT_SHORT, Kind.UNREACHABLE}
)
"""Failures a later attempt may not meet: the openai and anthropic SDKs retry exactly these
(408, 409, 429, 5xx, no answer, no connection), and Gemini's retries do the same."""


def status_kind(code: int) -> Kind:
    """The ladder: what an HTTP error status says went wrong."""
    if code in (401, 403):
        return Kind.KEY
    if code == 429:
        return Kind.RATE_LIMITED
    if code in (408, 409) or code >= 500:  # a timeout, a lock or conflict, a server error
        return Kind.SERVER
    return Kind.REJECTED


SENTENCES: dict[Kind, str] = {
    Kind.KEY: (
        "{name}: authentication failed ({status}): {detail}; check the API key in {key} "
        "and that it may use model {model!r}"
    ),
    Kind.REJECTED: (
        "{name}: the request was rejected ({status}): {detail}. Fix the request (check the "
        "model name {model!r}, the base URL and the options) and retry"
    ),
    Kind.RATE_LIMITED: (
        "{name}: the server still rate-limited the request after {tries} ({status}): "
        "{detail}; wait until it is no longer rate limited and run again, or raise max_retries="
    ),
    Kind.SERVER: (
        "{name}: the server kept failing with {status} after {tries}: {detail}; try again "
        "later, or raise max_retries="
    ),
    Kind.TIMEOUT: (
        "{name}: did not answer in time, after {tries}; raise timeout= or max_retries=, or "
        "check that the server is not overloaded"
    ),
    Kind.CUT_SHORT: (
        "{name}: the connection closed before the whole reply arrived ({error}), after "
        "{tries}; the server or a proxy in between cut it short: check its logs and limits, "
        "or try again"
    ),
    Kind.UNREACHABLE: (
        "{name}: cannot connect after {tries} ({error}); check that the server is running "
        "and the base URL is right"
    ),
    Kind.REFUSED: "{name}: the request failed ({error})",
}
"""One sentence per kind: what happened, then what to do."""
ASKED_TO_WAIT = (
    "{name}: {status}: {detail}; the server asks to wait {asked:,.0f} s before trying again, "
    "after {tries}; try again then"
)
"""For a retrying provider that stopped because the server asked for a longer wait than is
worth sitting through."""


def retries(count: int) -> str:
    """The retries an SDK was allowed, in words."""
    return f"{count} retries"


def attempts(count: int) -> str:
    """The attempts warmloop made, in words."""
    return "1 attempt" if count == 1 else f"{count} attempts"


@dataclass(frozen=True)
class HttpError:
    """What an SDK's HTTP error says: its status code, the SDK's message, the parsed body,
    and a status name where the API gives one (Gemini's `UNAVAILABLE`)."""

    code: int
    message: str
    body: object = None
    status: str = ""
    retry_after: float | None = None
    """Seconds the server asked to wait before trying again (`hinted_wait`), if it said."""

    @property
    def detail(self) -> str:
        """The API's own words (`error.message`, after `error.type` when it names one), else
        the SDK's message; without a closing period, as the sentences go on after it."""
        body = self.body
        # Anthropic and Gemini hand over the whole body, the openai SDK its `error` object.
        error = body.get("error", body) if isinstance(body, dict) else None
        text = self.message
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text, kind = error["message"], error.get("type")
            text = f"{kind}: {text}" if isinstance(kind, str) and kind else text
        elif isinstance(error, str) and error:
            text = error
        return text.rstrip(". ") or self.message


@dataclass(frozen=True)
class SdkErrors:
    """One SDK's exceptions, as the ladder reads them: `http` (an error reply, read by
    `read`), `timeout` (no answer in time), `network` (no connection, or one that broke),
    and `other` exceptions that mean the SDK did not make the request."""

    http: type[Exception]
    read: Callable[[Any], HttpError]
    timeout: tuple[type[BaseException], ...]
    network: tuple[type[BaseException], ...]
    other: tuple[type[BaseException], ...] = ()

    @property
    def caught(self) -> tuple[type[BaseException], ...]:
        """Every exception the ladder reads."""
        return (self.http, *self.timeout, *self.network, *self.other)


def hinted_wait(headers: object, now: Callable[[], float] = time.time) -> float | None:
    """Seconds a reply's headers ask to wait: `retry-after-ms` (the openai and anthropic
    SDKs read it first), else `Retry-After` in seconds or as an HTTP date (RFC 9110 10.2.3);
    None when they say nothing readable."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for header, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = get(header)
        if isinstance(value, str) and value.strip():
            with contextlib.suppress(ValueError):
                wait = float(value) / scale
                if math.isfinite(wait):  # `inf`, `nan`, `1e309` name no wait a client can keep
                    return max(wait, 0.0)
    value = get("retry-after")
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(when.timestamp() - now(), 0.0)
    return None


def _stainless_error(exc: Any) -> HttpError:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return HttpError(exc.status_code, exc.message, exc.body, retry_after=hinted_wait(headers))


def stainless_errors(sdk: ModuleType, *other: type[BaseException]) -> SdkErrors:
    """The errors of the openai or anthropic SDK (both generated by Stainless: the same
    class names and fields); `other` are further exceptions that mean it made no request."""
    return SdkErrors(
        http=sdk.APIStatusError,
        read=_stainless_error,
        timeout=(sdk.APITimeoutError,),
        network=(sdk.APIConnectionError,),
        other=(sdk.APIError, *other),
    )


def _classes(*names: tuple[str, str]) -> tuple[type[BaseException], ...]:
    """The exception classes `(module, name)` of the HTTP libraries that are installed."""
    found: list[type[BaseException]] = []
    for module_name, name in names:
        with contextlib.suppress(ImportError, AttributeError):
            found.append(getattr(importlib.import_module(module_name), name))
    return tuple(found)


@functools.cache
def library_timeouts() -> tuple[type[BaseException], ...]:
    """Timeouts of the HTTP libraries an SDK may let through: httpx2 (the SDKs' own), httpx
    (a client a user passed in), aiohttp (when installed), and asyncio's."""
    found = _classes(
        ("httpx2", "TimeoutException"),
        ("httpx", "TimeoutException"),
        ("aiohttp", "ServerTimeoutError"),
    )
    return (TimeoutError, *found)


@functools.cache
def library_network_errors() -> tuple[type[BaseException], ...]:
    """Every failure of those HTTP libraries."""
    return library_timeouts() + _classes(
        ("httpx2", "HTTPError"), ("httpx", "HTTPError"), ("aiohttp", "ClientError")
    )


@functools.cache
def _cut_short() -> tuple[type[BaseException], ...]:
    # A connection that broke while the reply was being read ("peer closed connection
    # without sending complete message body").
    return _classes(
        ("httpx2", "RemoteProtocolError"),
        ("httpx2", "ReadError"),
        ("httpx", "RemoteProtocolError"),
        ("httpx", "ReadError"),
    )


def causes(exc: BaseException) -> list[BaseException]:
    """`exc` and the chain of exceptions behind it, outermost first (no cycles)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


@dataclass(frozen=True)
class Failure:
    """One failed request, read: its kind, and the error reply when there was one."""

    kind: Kind
    error: BaseException
    http: HttpError | None = None

    @property
    def retried(self) -> bool:
        """Whether a later attempt may succeed."""
        return self.kind in RETRIED


def classify(exc: BaseException, sdk: SdkErrors) -> Failure:
    """What `exc`, raised by `sdk`, says went wrong."""
    if isinstance(exc, sdk.http):
        http = sdk.read(exc)
        return Failure(status_kind(http.code), exc, http)
    if isinstance(exc, sdk.timeout):
        return Failure(Kind.TIMEOUT, exc)
    cut = _cut_short()
    if any(isinstance(cause, cut) for cause in causes(exc)):
        return Failure(Kind.CUT_SHORT, exc)
    if isinstance(exc, sdk.network):
        return Failure(Kind.UNREACHABLE, exc)
    return Failure(Kind.REFUSED, exc)


def _named(exc: BaseException) -> str:
    """The innermost cause of `exc`, with its type: what actually failed."""
    root = causes(exc)[-1]
    return f"{type(root).__name__}: {root}"


def scrubbed(error: ProviderError, secrets: tuple[str, ...]) -> ProviderError:
    """`error` with every secret masked: itself when none occurs, else a new error of the
    same class (raise it `from None`: the original may hold the secret too)."""
    text = scrub(str(error), secrets)
    if text == str(error):
        return error
    if isinstance(error, ContextWindowExceeded):
        return ContextWindowExceeded(text, prompt_tokens=error.prompt_tokens, window=error.window)
    if isinstance(error, RateLimited):
        return RateLimited(text, retry_after=error.retry_after)
    if isinstance(error, ProviderUnavailable):
        return ProviderUnavailable(text)
    return ProviderError(text)


def raise_clean(error: ProviderError, secrets: tuple[str, ...], cause: BaseException) -> NoReturn:
    """Raise `error` from `cause`, or its scrubbed copy from nothing when it held a secret."""
    clean = scrubbed(error, secrets)
    if clean is error:
        raise error from cause
    raise clean from None


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


@dataclass(frozen=True)
class Failures:
    """One model's failures as ProviderErrors: `name` opens every message, `model` and `key`
    (the variable its API key comes from) are what the advice names, `secrets` are masked.
    `status_style` is how the model's messages write a status code."""

    name: str
    model: str
    key: str
    sdk: SdkErrors
    secrets: tuple[str, ...] = ()
    status_style: str = "{code}"

    def error(self, exc: BaseException, *, tries: str, asked: float | None = None) -> ProviderError:
        """The ProviderError `exc` means; `tries` says what was tried (`retries(2)`,
        `attempts(3)`), `asked` a wait the server asked for that was too long to sit through."""
        failure = classify(exc, self.sdk)
        http = failure.http
        if http is not None:
            found = context_overflow(self.name, http.message, http.body)
            if found is not None:
                return found
        status = self.status_style.format(code=http.code) if http is not None else ""
        if http is not None and http.status:
            status = f"{status} {http.status}"
        waited = asked is not None and http is not None
        sentence = ASKED_TO_WAIT if waited else SENTENCES[failure.kind]
        text = sentence.format(
            name=self.name,
            model=self.model,
            key=self.key,
            status=status,
            detail=http.detail if http is not None else "",
            tries=tries,
            error=_named(exc),
            asked=asked,
        )
        if failure.kind is Kind.RATE_LIMITED:
            hint = asked if asked is not None else http.retry_after if http is not None else None
            return RateLimited(text, retry_after=hint)
        if failure.retried:  # a server that kept failing, no answer, no connection
            return ProviderUnavailable(text)
        return ProviderError(text)

    def raise_for(self, exc: BaseException, *, tries: str, asked: float | None = None) -> NoReturn:
        """Raise the ProviderError `exc` means, without a credential in it."""
        raise_clean(self.error(exc, tries=tries, asked=asked), self.secrets, exc)

    @contextlib.contextmanager
    def mapped(self, *, tries: str) -> Iterator[None]:
        """Around a request and the reading of its reply: whatever fails comes out as a
        ProviderError without a credential in it. Refused before anything is sent while
        requests are off (a test run: `warmloop.testing`)."""
        check_allow_model_requests(self.name)
        try:
            yield
        except json.JSONDecodeError as exc:  # an SDK that parses the body itself
            raise_clean(not_json(exc.doc, self.name), self.secrets, exc)
        except ProviderError as exc:
            clean = scrubbed(exc, self.secrets)
            if clean is exc:
                raise
            raise clean from None
        except self.sdk.caught as exc:
            self.raise_for(exc, tries=tries)
