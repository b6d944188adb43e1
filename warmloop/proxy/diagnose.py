"""`warmloop record --diagnose`: ask the provider for its own cache verdict on every request.

Opt-in, and only for the APIs whose wire format's record documents the fields
(`WireFormat.diagnostics_host`, `diagnostics_field`, `diagnostics_beta` and `beta_header`):
- `https://api.anthropic.com`, Messages requests: the `anthropic-beta` header gains
  `cache-diagnosis-2026-04-07` and the body `diagnostics.previous_message_id`: the id of
  the response to the request this one continues (null for a conversation's first request,
  which opts it in);
- `https://api.openai.com`, Responses requests: `prompt_cache_options.comparison_response_id`
  (other `prompt_cache_options` kept), for every request that continues an earlier one.

The earlier response is the one `wire.comparison` picks from the answered requests the
proxy has seen: the same routing key first, else the conversation the request extends, else
the longest shared prefix. A request that already asks for diagnostics, a body that is not a
JSON object, another endpoint and any other host go upstream byte for byte as sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from warmloop.exchange import json_body
from warmloop.exchange.formats import format_from_path, logged_layout
from warmloop.exchange.formats import routing_key as find_routing_key
from warmloop.providers.records import WireFormat
from warmloop.providers.registry import wire_formats
from warmloop.wire.comparison import Baselines
from warmloop.wire.stream import WireStream, canonical_stream


def diagnosable(upstream: str) -> WireFormat | None:
    """The format `--diagnose` adds fields to on this upstream (https, default port, one of
    a wire format's `diagnostics_host`), or None: every request to any other upstream goes
    as sent."""
    parts = urlsplit(upstream)
    if parts.scheme != "https" or parts.port not in (None, 443) or parts.username:
        return None
    host = (parts.hostname or "").lower()
    return next((fmt for fmt in wire_formats() if fmt.diagnostics_host == host), None)


@dataclass(frozen=True)
class Asked:
    """A request sent with diagnostic fields: what to remember once it is answered."""

    stream: WireStream
    key: str | None
    headers: list[tuple[str, str]]
    body: bytes


class Diagnoser:
    """Adds the diagnostic fields to one upstream's requests and remembers its answers."""

    def __init__(self, wire: WireFormat) -> None:
        self.wire = wire
        self.baselines = Baselines(loose=True)

    def ask(
        self, method: str, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> Asked | None:
        """The request with the diagnostic fields added, or None to send it as it came."""
        if method != "POST" or format_from_path(path) is not self.wire:
            return None
        try:
            request = json_body.loads(body)
        except ValueError:
            return None
        if not isinstance(request, dict) or _asks_already(request, self.wire):
            return None
        stream = canonical_stream(request, logged_layout(self.wire))
        key = find_routing_key(request)
        earlier = self.baselines.find(stream, key)
        if self.wire.diagnostics_field is None or (
            earlier is None and not self.wire.asks_without_baseline
        ):
            return Asked(stream, key, headers, body)  # nothing to compare with yet
        outer, inner = self.wire.diagnostics_field
        options = request.get(outer)
        options = dict(options) if isinstance(options, dict) else {}
        request[outer] = {**options, inner: earlier}
        if self.wire.diagnostics_beta is not None and self.wire.beta_header is not None:
            headers = _with_beta(headers, self.wire.beta_header, self.wire.diagnostics_beta)
        sent = json_body.dumps(request)
        return Asked(stream, key, headers, sent)

    def answered(self, asked: Asked, response_id: str | None) -> None:
        """Remember an answered request, so a later one can name its response."""
        if response_id:
            self.baselines.remember(asked.stream, asked.key, response_id)


def _asks_already(request: dict[str, Any], wire: WireFormat) -> bool:
    """Whether the client already asks for diagnostics (or wrote the field's object in a
    shape warmloop would have to change): `wire`'s field is set, or its object is not one."""
    if wire.diagnostics_field is None:
        return False
    outer, inner = wire.diagnostics_field
    options = request.get(outer)
    return inner in options if isinstance(options, dict) else outer in request


def _with_beta(headers: list[tuple[str, str]], name: str, beta: str) -> list[tuple[str, str]]:
    """The headers with the diagnostics beta added to the header `name` (once)."""
    lowered = name.lower()
    values = [v for k, v in headers if k.lower() == lowered]
    betas = [b.strip() for v in values for b in v.split(",") if b.strip()]
    if beta in betas:
        return headers
    others = [(k, v) for k, v in headers if k.lower() != lowered]
    return [*others, (lowered, ",".join([*betas, beta]))]
