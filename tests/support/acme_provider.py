"""A provider warmloop does not ship, written outside the package: the worked example of
docs/adding-a-provider.md. One module (the model, its wire format, its errors, its
tokenizer, its usage) plus one table entry (`PROFILES`, `PRICES`), registered through the
public hooks. The model reads its key variable, error mapping and routing header from its
record, as the built-in ones do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.facts.usage import Usage, count
from warmloop.messages import AssistantTurn
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets
from warmloop.providers.failures import Failures, HttpError, SdkErrors, attempts
from warmloop.providers.records import ProviderRecord, RoutingKey, WireFormat
from warmloop.providers.routing import routing_key
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.stream import WireLayout, canonical_stream


class AcmeError(Exception):
    """What Acme's SDK raises for an error reply: its status and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


ERRORS = SdkErrors(
    http=AcmeError,
    read=lambda exc: HttpError(exc.code, exc.message),
    timeout=(TimeoutError,),
    network=(ConnectionError,),
)
"""Acme's errors, as warmloop's one failure ladder reads them."""


def count_tokens(text: str) -> int:
    """Acme's tokenizer: one token per word."""
    return len(text.split())


def acme_usage(raw: Mapping[str, Any]) -> Usage:
    """Acme's usage object: `fresh` and `reused` prompt tokens, `said` answer tokens."""
    return Usage(count(raw.get("fresh")), count(raw.get("reused")), 0, count(raw.get("said")))


LAYOUT = WireLayout("acme-wire", ("turns",), ("tools",), ("preamble",))
WIRE_FORMAT = WireFormat(
    LAYOUT.name,
    LAYOUT,
    provider="acme",
    answer=("limit",),
    endpoint=r"/acme/v1/complete$",
    read_usage=acme_usage,
)
RECORD = ProviderRecord(
    "acme",
    "tests.support.acme_provider:AcmeModel",
    LAYOUT.name,
    key_variables=("ACME_API_KEY",),
    display_name="Acme",
    families=("acme-",),
    example="acme:acme-1",
    errors="tests.support.acme_provider:ERRORS",
    routing=RoutingKey(header="x-acme-thread"),
    token_counter="tests.support.acme_provider:count_tokens",
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

    def __init__(self, model: str, *, api_key: str | None = None) -> None:
        self.name = f"{RECORD.prefix}:{model}"
        self.facts: ModelFacts = table_facts(self.name)
        self.api_key = find_key(api_key, *RECORD.key_variables)
        self.secrets = client_secrets(self.api_key)
        self.failures = Failures(
            self.name, model, RECORD.key_names, RECORD.sdk_errors(), self.secrets
        )
        self.sent: list[Rendered] = []
        self.headers: list[dict[str, str]] = []
        self.fail: Exception | None = None
        """What Acme's SDK raises on the next request, if anything."""

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
        header = RECORD.routing.header if RECORD.routing is not None else None
        with self.failures.mapped(tries=attempts(1)):
            if self.fail is not None:
                raise self.fail
            self.sent.append(rendered)
            if header is not None:
                self.headers.append({header: routing_key(session_id, self.secrets)})
            return ModelResponse(AssistantTurn(text="ok"), Usage(10, 0, 0, 1))
