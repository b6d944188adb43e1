"""A run's records of what it sent, written the way a run writes them: the record appended
to the run's list, then the keep-alive told (it reads the list, keeping no copy)."""

from __future__ import annotations

from warmloop.keepalive.pauses import RunPauses
from warmloop.keepalive.sent import SentRequest
from warmloop.providers.base import Rendered


def sent(
    pauses: RunPauses,
    rendered: Rendered,
    at: float,
    prompt_tokens: int,
    cold_tokens: int | None = None,
    *,
    chars: int = 0,
) -> None:
    """The run sent `rendered` at `at` (the policy's clock) with `prompt_tokens`."""
    assert isinstance(pauses.requests, list)  # the run's own list
    pauses.requests.append(SentRequest(rendered, at, prompt_tokens, chars, cold_tokens))
    pauses.sent()
