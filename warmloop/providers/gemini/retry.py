"""Retries for Gemini requests, done by warmloop rather than the SDK.

The google-genai SDK's own retries back off exponentially and ignore how long the server
asks a client to wait, so a quota error was hammered with retries that could not succeed
(and the error then claimed every attempt had been made, even for a 400 sent once). Here
each failure `failures` counts as worth retrying (408, 409, 429, 5xx, or the network)
waits for what the server asked, `Retry-After` or a `google.rpc.RetryInfo` `retryDelay` (Gemini API
troubleshooting guide, "Error codes": 429 RESOURCE_EXHAUSTED), else for an exponential
backoff, and the attempts actually made are counted.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from google.genai import errors as genai_errors

from warmloop.providers.failures import (
    HttpError,
    SdkErrors,
    classify,
    hinted_wait,
    library_network_errors,
    library_timeouts,
)

T = TypeVar("T")
MAX_WAIT = 120.0
"""The longest wait a server may ask for that is still worth sitting through: a quota that
resets in an hour is reported at once instead of hanging the run."""
_SECONDS = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _http_error(exc: genai_errors.APIError) -> HttpError:
    message = str(exc.message or exc)
    return HttpError(exc.code, message, exc.details, exc.status or "", server_wait(exc))


GEMINI_ERRORS = SdkErrors(
    http=genai_errors.APIError,
    read=_http_error,
    # The SDK lets its HTTP library's failures through: httpx2 (its own client), httpx (a
    # client a user passed in), aiohttp (when installed).
    timeout=library_timeouts(),
    network=library_network_errors(),
)


def _retry_info(details: Any) -> float | None:
    error = details.get("error") if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            match = _SECONDS.match(str(item.get("retryDelay", "")))
            if match:
                return float(match[1])
    return None


def server_wait(error: BaseException) -> float | None:
    """Seconds the server asked to wait before the next attempt, if it said."""
    if not isinstance(error, genai_errors.APIError):
        return None
    found = hinted_wait(getattr(error.response, "headers", None))
    return found if found is not None else _retry_info(error.details)


class GaveUp(Exception):
    """The last failure, after `attempts` attempts; `asked` is a wait the server asked for
    that was too long to sit through."""

    def __init__(self, error: BaseException, attempts: int, asked: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts
        self.asked = asked


async def with_retries(
    request: Callable[[], Awaitable[T]],
    *,
    attempts: int,
    delay: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """`request()`, tried up to `attempts` times; GaveUp carries the last failure and the
    attempts made. Non-retriable API errors are not retried."""
    for attempt in range(1, attempts + 1):
        try:
            return await request()
        except GEMINI_ERRORS.caught as exc:
            if not classify(exc, GEMINI_ERRORS).retried or attempt == attempts:
                raise GaveUp(exc, attempt) from exc
            failure = exc
        asked = server_wait(failure)
        if asked is not None and asked > MAX_WAIT:
            raise GaveUp(failure, attempt, asked) from failure
        await sleep(asked if asked is not None else delay * 2 ** (attempt - 1))
    raise AssertionError("unreachable: the last attempt returns or raises")
