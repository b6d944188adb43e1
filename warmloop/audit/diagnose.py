"""`warmloop record --diagnose`: ask the provider for its own cache verdict on every request.

Opt-in, and only for the two APIs that document the fields (see `wire.verdict`):
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

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from warmloop.audit.formats import ANTHROPIC_FORMAT, RESPONSES_FORMAT, WireFormat, format_from_path
from warmloop.audit.formats import routing_key as find_routing_key
from warmloop.wire.comparison import Baselines
from warmloop.wire.stream import WireStream, canonical_stream
from warmloop.wire.verdict import ANTHROPIC_BETA

HOSTS = {"api.anthropic.com": ANTHROPIC_FORMAT, "api.openai.com": RESPONSES_FORMAT}
"""The only upstreams whose requests `--diagnose` changes, and the one format on each."""
BETA_HEADER = "anthropic-beta"


def diagnosable(upstream: str) -> WireFormat | None:
    """The format `--diagnose` adds fields to on this upstream (https, default port, one of
    `HOSTS`), or None: every request to any other upstream goes as sent."""
    parts = urlsplit(upstream)
    if parts.scheme != "https" or parts.port not in (None, 443) or parts.username:
        return None
    return HOSTS.get((parts.hostname or "").lower())


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
            request = json.loads(body)
        except ValueError:
            return None
        if not isinstance(request, dict) or _asks_already(request):
            return None
        stream = canonical_stream(request, self.wire.layout)
        key = find_routing_key(request)
        earlier = self.baselines.find(stream, key)
        if self.wire is ANTHROPIC_FORMAT:
            request["diagnostics"] = {"previous_message_id": earlier}
            headers = _with_beta(headers)
        elif earlier is not None:
            options = request.get("prompt_cache_options")
            options = dict(options) if isinstance(options, dict) else {}
            request["prompt_cache_options"] = {**options, "comparison_response_id": earlier}
        else:
            return Asked(stream, key, headers, body)  # nothing to compare with yet
        sent = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()
        return Asked(stream, key, headers, sent)

    def answered(self, asked: Asked, response_id: str | None) -> None:
        """Remember an answered request, so a later one can name its response."""
        if response_id:
            self.baselines.remember(asked.stream, asked.key, response_id)


def _asks_already(request: dict[str, Any]) -> bool:
    options = request.get("prompt_cache_options")
    return "diagnostics" in request or (
        isinstance(options, dict) and "comparison_response_id" in options
    )


def _with_beta(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers with the diagnostics beta added to `anthropic-beta` (once)."""
    values = [v for k, v in headers if k.lower() == BETA_HEADER]
    betas = [b.strip() for v in values for b in v.split(",") if b.strip()]
    if ANTHROPIC_BETA in betas:
        return headers
    others = [(k, v) for k, v in headers if k.lower() != BETA_HEADER]
    return [*others, (BETA_HEADER, ",".join([*betas, ANTHROPIC_BETA]))]
