"""What every streamed request shares: reading a stream whose events can be malformed or
cut short, as a `ProviderError` that says which, never a hang or a half reply."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from warmloop.errors import ProviderError


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
