"""Acme's model: renders a transcript to Acme's body and sends it (no SDK: a send appends
to `sent`, or raises what the test set in `fail`); its key variable, error mapping and
routing header come from its record, as the built-in models' do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.support.acme.record import LAYOUT, RECORD
from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets
from warmloop.providers.failures import Failures, HttpError, SdkErrors, attempts
from warmloop.providers.routing import routing_key
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.stream import canonical_stream


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
