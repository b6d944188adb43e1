"""The audit's side of the kinds of miss no diff explains (`wire.misses` classifies them,
for the audit and the live agent alike): the TTL a logged request writes for."""

from __future__ import annotations

from collections.abc import Mapping

from warmloop.audit.blocks import Pieces


def request_ttl(body: Mapping[str, object], found: Pieces) -> str | None:
    """The TTL a logged request writes for: its last cache marker's (Anthropic), else
    `prompt_cache_options.ttl` or `prompt_cache_retention` (OpenAI); None: the default."""
    marks = [mark for mark in found.marks if mark is not None]
    if marks:
        return marks[-1]
    options = body.get("prompt_cache_options")
    if isinstance(options, Mapping) and isinstance(options.get("ttl"), str):
        return str(options["ttl"])
    retention = body.get("prompt_cache_retention")
    return retention if isinstance(retention, str) else None
