"""A longer TTL where it pays, on a request the proxy placed the breakpoints of: the agent's
choice (`keepalive.pauses.longer_retention`, over `keepalive.rule.choose_retention`) from the
conversation's earlier pauses, among the TTLs a request can carry on its own (Anthropic's
`1h` markers at 2x instead of 1.25x); written with `keepalive.ping.with_cache_ttl`. A
client's own markers are the client's: this is only asked where the proxy placed them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from warmloop.exchange import json_body
from warmloop.exchange.formats import logged_layout, model_name, own_profile
from warmloop.keepalive.pauses import longer_retention
from warmloop.keepalive.ping import with_cache_ttl
from warmloop.providers.base import Rendered
from warmloop.providers.records import WireFormat
from warmloop.wire.stream import canonical_stream


def longer_ttl(
    wire: WireFormat,
    request: Mapping[str, Any],
    path: str,
    body: bytes,
    last: tuple[int, int] | None,
    history: Sequence[float],
) -> tuple[bytes, str] | None:
    """`body` (as it goes upstream) written with a longer TTL where the conversation's
    earlier pauses (`history`, seconds) say it pays, and the TTL's name; or None. `last`:
    the conversation's previous request's prompt tokens and body bytes (the token ratio,
    and what is new)."""
    if last is None or not history or not last[1]:
        return None
    prompt, chars = last
    ratio = prompt / chars
    profile = own_profile(wire, model_name(request, path))
    longer = longer_retention(
        profile,
        wire.name,
        int(len(body) * ratio),
        int(max(0, len(body) - chars) * ratio),
        history,
    )
    if longer is None:
        return None
    payload = json_body.loads(body)
    layout = logged_layout(wire)
    rendered = Rendered(payload, lambda p: canonical_stream(p, layout), wire_format=wire.name)
    written = with_cache_ttl(rendered, longer.name).payload
    sent = json_body.dumps(written)
    return sent, longer.name
