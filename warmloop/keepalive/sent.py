"""What a run sent, as its own record: one entry per request, the run's list, which the
keep-alive reads (the last request is what a keep-alive repeats, its prompt what a miss
would cost, its time where the cache's clock starts) instead of keeping a copy beside it.

A request has two records, each with a reason: a `SentRequest` is what went out (the
payload itself, in memory for as long as the run lasts: a keep-alive repeats it byte for
byte), and holds the `RequestRecord` of what came back (usage, seconds, the guard's check,
the provider's verdict: small, stored with a session and shown by the CLI)."""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.providers.base import Rendered
from warmloop.wire.request_record import RequestRecord


@dataclass(frozen=True)
class SentRequest:
    """One request a run sent: as it went on the wire (`rendered`, a longer TTL's markers
    included), when (`at`, the keep-alive policy's clock), its prompt in tokens, its length
    as the guard reads it (`chars`, without the TTL's markers), the prompt a cold resume
    would send after its prune (`cold_tokens`; None: the whole), the TTL it was written
    with when not the model's own, and what came back (`record`; None for the stand-in a
    wait between runs starts from)."""

    rendered: Rendered
    at: float
    prompt_tokens: int
    chars: int = 0
    cold_tokens: int | None = None
    ttl: str | None = None
    record: RequestRecord | None = None
