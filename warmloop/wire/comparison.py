"""Which earlier response a request continues: the baseline a provider's cache diagnostics
compare it with (Anthropic's `diagnostics.previous_message_id`, OpenAI's
`prompt_cache_options.comparison_response_id`; see `wire.verdict`).

`Baselines` remembers the latest answered requests (their canonical stream, routing key and
response id) and picks, for a new request, the one it most likely continues: among requests
of the same routing key, the one sharing the longest prefix; else one whose whole
conversation the new request extends (a fork, or a follow-up run under a new key); else,
when `loose` and the request has no key, any earlier request sharing the longest prefix (a
proxy seeing a client that sends no key: a key it has not seen before is a new
conversation by the client's own word). Memory is bounded: the oldest entries are forgotten.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from warmloop.wire.stream import WireStream

KEPT = 32
"""Answered requests remembered: enough for a few conversations interleaved."""


@dataclass(frozen=True)
class _Answered:
    stream: WireStream
    key: str | None
    response_id: str


def shared(previous: WireStream, current: WireStream) -> tuple[int, int]:
    """How much two streams share from the start: (equal head pieces, then equal leading
    conversation items once every head piece is equal)."""
    heads = 0
    for a, b in zip(previous.head, current.head, strict=False):
        if a != b:
            return heads, 0
        heads += 1
    if len(previous.head) != len(current.head):
        return heads, 0
    items = 0
    for old, new in zip(previous.items, current.items, strict=False):
        if old != new:
            break
        items += 1
    return heads, items


def extends(previous: WireStream, current: WireStream) -> bool:
    """Whether `current` carries all of `previous` (same head, its items first)."""
    heads, items = shared(previous, current)
    return heads == len(current.head) and items == len(previous.items)


class Baselines:
    """The latest answered requests, and the one a new request continues (thread-safe)."""

    def __init__(self, *, loose: bool = False, kept: int = KEPT) -> None:
        self.loose = loose
        self._answered: deque[_Answered] = deque(maxlen=kept)
        self._lock = threading.Lock()

    def remember(self, stream: WireStream, key: str | None, response_id: str) -> None:
        """Note an answered request and its response's id."""
        with self._lock:
            self._answered.append(_Answered(stream, key, response_id))

    def find(self, stream: WireStream, key: str | None) -> str | None:
        """The response id of the request `stream` most likely continues, or None."""
        with self._lock:
            answered = list(self._answered)
        same_key = [a for a in answered if key is not None and a.key == key]
        pool = (
            same_key
            or [a for a in answered if extends(a.stream, stream)]
            or (answered if self.loose and key is None else [])
        )
        if not pool:
            return None
        # The longest shared prefix; a tie goes to the most recent.
        best = max(reversed(pool), key=lambda a: shared(a.stream, stream))
        return best.response_id
