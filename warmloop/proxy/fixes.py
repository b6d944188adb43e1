"""What `warmloop proxy` adds to a request so its cache is reused: cache markers, a routing
key, a session header; never anything the model reads.

Each fix is switchable (`Fixes`) and each rule is read where warmloop keeps it:
- cache breakpoints where the client's own leave room, by the format's own placement
  (`WireFormat.place_breakpoints`: for Anthropic Messages, warmloop's own placement, the
  client's markers counted wherever they are and never moved, at most 4 in all, each read
  found within the 20-block lookback; for OpenAI's Chat Completions and Responses, the
  explicit breakpoint on the opening system or developer messages, for a model whose
  profile takes breakpoints, so every session of an agent reads the shared opening), and
  only where the conversation's `Reach` says the next request reads them (a conversation
  seen rebuilding its prompt gets no write nothing reads). Where the format's cache reads
  and writes only at markers (`explicit_breakpoints`) they are placed on any host; where a
  marker is an extra field, only on the provider's own host;
- the routing key the provider record names (`ProviderRecord.routing`: `prompt_cache_key`
  in the body for OpenAI, a header for xAI), where the client sent none, on the provider's
  own hosts only (`ProviderRecord.hosts`, read by the rule the `openai:` model reads them
  by, `providers.routing.own_host`: another host speaking the same wire may refuse a field
  it never documented). GPT-5.6 and later match their cache through it: without it a
  request falls back to the older matching;
- a session header for a self-hosted router (`--session-header`, checked as
  `providers.routing.header_name` checks a model's), where the client sent none.
The key and the header carry the conversation's routing key: a hash of its lineage
(`exchange.identity.lineage_key`: the client's own key where it sent one, so a parent and its
sub-agents share it, else its system prompt and task), stable across the proxy's restarts,
never a credential or the client's own value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from warmloop.exchange import json_body
from warmloop.exchange.formats import own_profile
from warmloop.facts.profiles import CacheProfile
from warmloop.providers.records import FULL_REACH, ProviderRecord, Reach, WireFormat
from warmloop.providers.registry import providers
from warmloop.providers.routing import header_name, own_host, routing_key


@dataclass(frozen=True)
class Fixes:
    """The switches: `breakpoints` (cache markers where the client placed none),
    `cache_key` (the provider's routing key), `session_header` (a header name, or None)."""

    breakpoints: bool = True
    cache_key: bool = True
    session_header: str | None = None

    def __post_init__(self) -> None:
        header_name(self.session_header)  # a bad name is refused when the proxy starts

    @property
    def any(self) -> bool:
        """Whether any fix is on (off: every request goes as sent, as `warmloop record`)."""
        return self.breakpoints or self.cache_key or self.session_header is not None


BREAKPOINTS = "cache breakpoints"
"""What `Fixed.added` names when the proxy placed the breakpoints (the client placed none)."""
CLIENT_AND_BREAKPOINTS = "cache breakpoints beside the client's"
"""What `Fixed.added` names when the proxy added breakpoints to the client's own (a TTL
is then never changed: the client's markers are the client's)."""
OFF = Fixes(breakpoints=False, cache_key=False)
"""Every fix off: `warmloop record`."""


@dataclass(frozen=True)
class Fixed:
    """A request as it goes upstream: `body` (None: the client's bytes) and `headers`, and
    what was added, in words, for the log line and the status page."""

    body: bytes | None
    headers: list[tuple[str, str]]
    added: tuple[str, ...]


def home_provider(upstream: str, wire: WireFormat) -> ProviderRecord | None:
    """The provider whose own host the upstream is, speaking `wire` (None: any other host)."""
    url = httpx2.URL(upstream)
    return next(
        (p for p in providers() if p.wire_format == wire.name and own_host(url, p.hosts)),
        None,
    )


def apply(
    fixes: Fixes,
    wire: WireFormat,
    provider: ProviderRecord | None,
    body: dict[str, Any],
    headers: list[tuple[str, str]],
    conversation: str,
    reach: Reach = FULL_REACH,
) -> Fixed:
    """The request with the fixes `fixes` turns on added; `body` is the client's parsed body
    (not changed), `conversation` the routing key its field and header carry
    (`LiveConversation.routing`), `reach` how much of its prompt stays put
    (`LiveConversation.reach`)."""
    key = routing_key(conversation)
    added: list[str] = []
    out: dict[str, Any] = body
    place = wire.place_breakpoints
    if fixes.breakpoints and place and (wire.explicit_breakpoints or provider is not None):
        marked = place(body, _profile(wire, body), reach)
        if marked is not None:
            out = marked
            added.append(BREAKPOINTS if not _marks(body, wire) else CLIENT_AND_BREAKPOINTS)
    routing = provider.routing if provider is not None else None
    if fixes.cache_key and routing is not None and routing.field and routing.field not in out:
        out = {**out, routing.field: key}
        added.append(routing.field)
    names = {name.lower() for name, _ in headers}
    extra = [
        name
        for name in (
            routing.header if fixes.cache_key and routing is not None else None,
            fixes.session_header,
        )
        if name is not None and name.lower() not in names
    ]
    for name in dict.fromkeys(extra):
        headers = [*headers, (name, key)]
        added.append(name)
    return Fixed(_encoded(out) if out is not body else None, headers, tuple(added))


def _marks(body: Mapping[str, Any], wire: WireFormat) -> bool:
    """Whether the client's body carries a cache marker of its format anywhere."""
    keys = wire.layout.markers
    stack: list[Any] = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            if not keys.isdisjoint(value):
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _profile(wire: WireFormat, body: Mapping[str, Any]) -> CacheProfile | None:
    model = body.get("model")
    return own_profile(wire, model) if isinstance(model, str) else None


def _encoded(body: Mapping[str, Any]) -> bytes:
    return json_body.dumps(body)  # every number as the client wrote it
