"""A provider warmloop does not ship, written outside the package: the worked example of
docs/adding-a-provider.md. One module (the model and its wire format) plus one table
entry (`PROFILES`, `PRICES`), registered through the public hooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.records import ProviderRecord, WireFormat
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.stream import WireLayout, canonical_stream

LAYOUT = WireLayout("acme-wire", ("turns",), ("tools",), ("preamble",))
WIRE_FORMAT = WireFormat(
    LAYOUT.name, LAYOUT, provider="acme", answer=("limit",), endpoint=r"/acme/v1/complete$"
)
RECORD = ProviderRecord(
    "acme",
    "tests.support.acme_provider:AcmeModel",
    LAYOUT.name,
    display_name="Acme",
    families=("acme-",),
    example="acme:acme-1",
)
PROFILES = {
    "providers": {
        "acme": {
            "mode": "automatic",
            "matching": "common_prefix",
            "persists_common_prefix": False,
            "context_window": 64000,
            "min_cacheable_tokens": 1024,
            "increment_tokens": 128,
            "max_breakpoints": None,
            "lookback_blocks": None,
            "writes_billed": False,
            "read_multiplier": 0.1,
            "default_ttl": "5m",
            "ttls": {"5m": {"seconds": 300, "cold_after": 3600, "write_multiplier": 1.0}},
            "source": "https://acme.example/docs/caching",
            "as_of": "2026-01-01",
        }
    },
    "models": {},
}
PRICES = {
    "models": {
        "acme:acme-1": {
            "input": 1.0,
            "cache_read": 0.1,
            "cache_write": {"5m": 1.0},
            "output": 4.0,
            "source": "https://acme.example/pricing",
            "as_of": "2026-01-01",
        }
    }
}


class AcmeModel(KnownFacts):
    """Acme's API: one JSON body of `preamble`, `tools` and `turns`; `limit` caps the answer."""

    def __init__(self, model: str) -> None:
        self.name = f"acme:{model}"
        self.facts: ModelFacts = table_facts(self.name)
        self.sent: list[Rendered] = []

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        messages = [repr(message) for _, message in transcript.visible(0)]
        payload: dict[str, Any] = {
            "model": self.name.partition(":")[2],
            "tools": [tool.name for tool in tools],
            "turns": messages,
            "limit": 512,
        }
        return Rendered(payload, lambda p: canonical_stream(p, LAYOUT), 0, LAYOUT.name)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        self.sent.append(rendered)
        return ModelResponse(AssistantTurn(text="ok"), Usage(10, 0, 0, 1))
