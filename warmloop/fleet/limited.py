"""A model whose every request waits for room under the fleet's shared rate limits.

Before each request, `LimitedModel` takes room for it under the provider key's `Limit`
(`ratelimit.SharedLimiter`), counting the rendered prompt's estimated tokens; after it,
corrects them with the usage (prompt and output tokens). The SDKs already retry a 429
themselves, waiting what `retry-after-ms` / `Retry-After` asks (the openai and anthropic
SDKs: `max_retries`, 2 by default, hints up to 60 s; Gemini: warmloop's `gemini_retry`).
A 429 that comes through anyway (`RateLimited`) pauses the key for every worker, for the
wait the server asked (or `BACKOFF_SECONDS` when it did not say), then the request is sent
again, at most `RATE_LIMITED_TRIES` times in all; a wait longer than `MAX_WAIT_SECONDS`
(a quota that resets in an hour) still pauses the key, and the error is the run's. Render
is the wrapped model's: requests are byte-identical with or without limits.
"""

from __future__ import annotations

import math

from warmloop.errors import RateLimited
from warmloop.fleet.ratelimit import SharedLimiter
from warmloop.fleet.window import Limit
from warmloop.maintenance.size import DEFAULT_CHARS_PER_TOKEN
from warmloop.providers.base import Model, ModelResponse, Rendered, WrappedModel

BACKOFF_SECONDS = 30.0
"""The pause after a 429 whose reply named no wait."""
RATE_LIMITED_TRIES = 4
"""Sends of one request that end in a 429 before its error is the run's."""
MAX_WAIT_SECONDS = 300.0
"""The longest pause a task sits through; a longer one fails the task (the key stays
paused for the other workers)."""


def asked_wait(retry_after: float | None) -> float:
    """The wait a 429 asked for; BACKOFF_SECONDS when it named none or NaN. Infinity stays
    (over MAX_WAIT_SECONDS, it fails the task; the limiter bounds the key's pause)."""
    if retry_after is None or math.isnan(retry_after):
        return BACKOFF_SECONDS
    return max(retry_after, 0.0)


def estimated_tokens(rendered: Rendered) -> int:
    """A request's prompt tokens, estimated from its rendered length before it is sent."""
    return math.ceil(rendered.length / DEFAULT_CHARS_PER_TOKEN)


class LimitedModel(WrappedModel):
    """`model`, its requests limited by `limit` under `key` across the fleet."""

    def __init__(self, model: Model, limiter: SharedLimiter, limit: Limit, key: str) -> None:
        super().__init__(model)
        self.limiter, self.limit, self.key = limiter, limit, key

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        estimate = estimated_tokens(rendered)
        for attempt in range(1, RATE_LIMITED_TRIES + 1):
            sent = await self.limiter.acquire(self.key, self.limit, estimate)
            try:
                response = await self.model.send(rendered, session_id=session_id)
            except RateLimited as exc:
                wait = asked_wait(exc.retry_after)
                await self.limiter.pause(self.key, wait)
                if attempt == RATE_LIMITED_TRIES or wait > MAX_WAIT_SECONDS:
                    raise
                continue
            usage = response.usage
            await self.limiter.settle(sent, usage.prompt_tokens + usage.output_tokens)
            return response
        raise AssertionError("unreachable")  # pragma: no cover
