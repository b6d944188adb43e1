"""The proxy's status page (`GET /warmloop/status` on the proxy, `warmloop proxy --status`):
per conversation, its requests, busts, prompt tokens and the share read from cache, and the
dollars the breakpoints the proxy placed saved against the same requests without them.

Only the breakpoints' saving is priced: on a wire that caches only at markers, a request
that carries none reads nothing, so the same request without the proxy pays its whole
prompt at the input rate. A routing key's effect has no such counterfactual (the host may
have hit its cache anyway) and is shown as reuse only."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from warmloop.exchange.formats import model_name, model_spec
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost
from warmloop.facts.usage import Usage
from warmloop.providers.records import WireFormat
from warmloop.proxy.conversations import LiveConversation, Placed

STATUS_PATH = "/warmloop/status"
"""The proxy answers this path itself; no provider's API has it."""


@dataclass(frozen=True)
class Forwarded:
    """A model request on its way: where it was filed (None: filed nowhere), the client's
    parsed body, the headers and body that go upstream (None: the client's bytes), and
    what the fixes added."""

    placed: Placed | None
    request: Mapping[str, Any]
    headers: list[tuple[str, str]]
    body: bytes | None = None
    added: tuple[str, ...] = ()
    ttl: str | None = None
    """The longer TTL the proxy wrote it with (None: the model's own)."""


def saved_usd(
    wire: WireFormat, request: Mapping[str, Any], path: str, usage: Usage
) -> float | None:
    """What a request's cache reads and writes saved against paying its whole prompt at the
    input rate (negative for a first request, whose writes cost a premium); None when its
    model has no prices."""
    prices = prices_for(model_spec(wire, model_name(request, path)))
    if prices is None:
        return None
    uncached = replace(
        usage,
        cache_read_tokens=0,
        cache_write_tokens=0,
        cache_write_1h_tokens=0,
        cache_write_12h_tokens=0,
    )
    return cost(uncached, prices) - cost(usage, prices)


KEEPALIVE_FIELDS = ("keepalives", "keepalive_usd", "keepalive_saved_usd")
"""A row's keep-alive figures (`proxy.keepalive`): sent, their cost, and what they saved
net of it."""


def status_page(
    conversations: Sequence[LiveConversation],
    keepalives: Callable[[str], Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The page as JSON: totals, then each live conversation, most recent first;
    `keepalives` gives a conversation's keep-alive figures (None: keep-alive off)."""
    rows = [
        {
            "id": c.id,
            "format": c.wire.name,
            "key": c.key,
            "requests": c.requests,
            "busts": c.busts,
            "prompt_tokens": c.prompt_tokens,
            "cached_tokens": c.cached_tokens,
            "reuse": round(c.cached_tokens / c.prompt_tokens, 4) if c.prompt_tokens else None,
            "saved_usd": round(c.saved_usd, 6) if c.priced else None,
            **(keepalives(c.id) if keepalives is not None else {}),
        }
        for c in conversations
    ]
    kept = {name: round(sum(row.get(name, 0) for row in rows), 6) for name in KEEPALIVE_FIELDS}
    prompt = sum(c.prompt_tokens for c in conversations)
    cached = sum(c.cached_tokens for c in conversations)
    return {
        "conversations": len(rows),
        "requests": sum(c.requests for c in conversations),
        "busts": sum(c.busts for c in conversations),
        "reuse": round(cached / prompt, 4) if prompt else None,
        "saved_usd": round(sum(c.saved_usd for c in conversations), 6),
        **(kept if keepalives is not None else {}),
        "by_conversation": rows,
    }
