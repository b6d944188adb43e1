"""What every streamed request shares: reading a stream whose events can be malformed or
cut short, as a `ProviderError` that says which, never a hang or a half reply."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager
from typing import TypeVar

from warmloop.errors import ProviderError

T = TypeVar("T")


@contextmanager
def read_stream(name: str) -> Iterator[None]:
    """Around the reading of a stream: an event whose data is not JSON is a ProviderError
    naming it."""
    try:
        yield
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"{name}: malformed stream: an event's data is not JSON (it starts "
            f"{exc.doc[:60]!r}); try again, or send without streaming"
        ) from None


def cut_short(name: str, missing: str) -> ProviderError:
    """The error for a stream that ended before the event that closes it."""
    return ProviderError(
        f"{name}: the stream ended before its {missing} event (the reply was cut short); try again"
    )


def read_seconds(timeout: object) -> float | None:
    """The read timeout of an SDK client's `timeout` (a number of seconds, or an
    `httpx.Timeout` whose `read` it is); None where there is none."""
    seconds = getattr(timeout, "read", timeout)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    return float(seconds)


async def paced(items: AsyncIterable[T], seconds: float | None, name: str) -> AsyncIterator[T]:
    """`items` as they come, each within `seconds` of the one before (None: no bound).
    The HTTP read timeout bounds only silence: a server sending an SSE comment every second
    (a keep-alive the SDK reads and drops) kept a stream open forever. A comment is no
    event: none within `seconds` is a ProviderError that names the wait."""
    iterator = aiter(items)
    while True:
        try:
            item = await asyncio.wait_for(anext(iterator), seconds)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise ProviderError(
                f"{name}: the stream sent no event for {seconds:g} s (the request's timeout; "
                "keep-alive comments do not count); try again, or raise timeout"
            ) from None
        yield item
