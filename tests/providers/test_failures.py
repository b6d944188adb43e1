"""One error mapping for every provider: the same HTTP status (or the same network fault)
gives the same error class, the same kind of message and the same retries on Anthropic,
OpenAI Responses, Chat Completions and Gemini, each through its official SDK: an HTTP
status over the SDK's default transport from a keep-alive loopback server (`wire_server`),
a network fault (`connect`, `timeout`) from a mocked transport, which raises it at once.

Error bodies as documented: Anthropic "Errors" (`{"type": "error", "error": {type,
message}}`), OpenAI "Error codes" (`{"error": {message, type, code}}`), Gemini
troubleshooting "Error codes" (`{"error": {code, message, status}}`). Retry hints as
`retry-after-ms` (OpenAI and Anthropic SDKs) and `Retry-After` (RFC 9110, read by
warmloop's Gemini retries), so retries take no time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
from google import genai
from google.genai import types
from openai import AsyncOpenAI

from tests.support.wire_servers import WireServer, anthropic_client, gemini_client, openai_client
from warmloop import ProviderError, Transcript, UserText
from warmloop.errors import ProviderUnavailable, RateLimited
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model
from warmloop.providers.failures import RETRIED, SENTENCES, Kind, hinted_wait
from warmloop.providers.gemini.model import GeminiModel
from warmloop.providers.openai.chat import OpenAIChatModel
from warmloop.providers.openai.responses import OpenAIResponsesModel

Fault = int | str
"""An HTTP status, or `connect` / `timeout` for a request that got no reply."""
FAULTS: dict[Fault, Kind] = {
    400: Kind.REJECTED,
    401: Kind.KEY,
    403: Kind.KEY,
    404: Kind.REJECTED,
    408: Kind.SERVER,
    409: Kind.SERVER,
    413: Kind.REJECTED,
    422: Kind.REJECTED,
    429: Kind.RATE_LIMITED,
    500: Kind.SERVER,
    503: Kind.SERVER,
    529: Kind.SERVER,
    "connect": Kind.UNREACHABLE,
    "timeout": Kind.TIMEOUT,
}
BODIES: dict[str, Callable[[int], dict[str, Any]]] = {
    "anthropic": lambda code: {
        "type": "error",
        "error": {"type": "api_error", "message": f"Status {code} as documented."},
    },
    "openai": lambda code: {
        "error": {"message": f"Status {code} as documented.", "type": "api_error", "code": None}
    },
    "gemini": lambda code: {
        "error": {"code": code, "message": f"Status {code} as documented.", "status": "ERROR"}
    },
}


class Endpoint:
    """An API that answers every request with one fault, counting the requests."""

    def __init__(
        self, wire: WireServer, fault: Fault, body: Callable[[int], dict[str, Any]]
    ) -> None:
        self.wire = wire
        self.fault = fault
        self.body = body
        self.requests = 0

    def answer2(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        if self.fault == "connect":
            raise httpx2.ConnectError("Connection refused", request=request)
        if self.fault == "timeout":
            raise httpx2.ReadTimeout("timed out", request=request)
        assert isinstance(self.fault, int)
        hint = {"retry-after-ms": "1"}
        return httpx2.Response(self.fault, json=self.body(self.fault), headers=hint)

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.fault == "connect":
            raise httpx.ConnectError("Connection refused", request=request)
        if self.fault == "timeout":
            raise httpx.ReadTimeout("timed out", request=request)
        assert isinstance(self.fault, int)
        hint = {"Retry-After": "0"}
        return httpx.Response(self.fault, json=self.body(self.fault), headers=hint)

    @property
    def served(self) -> bool:
        """Whether the fault is a status the loopback server answers (else a mocked
        transport raises it: a refused connection or a read timeout)."""
        return isinstance(self.fault, int)

    def openai(self) -> AsyncOpenAI:
        if self.served:
            return openai_client(self.wire, self.answer2, api_key="k", max_retries=1)
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.answer2))
        return AsyncOpenAI(api_key="k", http_client=http, max_retries=1)

    def anthropic(self) -> anthropic.AsyncAnthropic:
        if self.served:
            return anthropic_client(self.wire, self.answer2, api_key="k", max_retries=1)
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self.answer2))
        return anthropic.AsyncAnthropic(api_key="k", http_client=http, max_retries=1)

    def gemini(self) -> genai.Client:
        if self.served:
            return gemini_client(self.wire, self.answer, api_key="k")
        http = httpx.AsyncClient(transport=httpx.MockTransport(self.answer))
        return genai.Client(api_key="k", http_options=types.HttpOptions(httpx_async_client=http))


def anthropic_model(wire: WireServer, fault: Fault) -> tuple[Model, Endpoint]:
    endpoint = Endpoint(wire, fault, BODIES["anthropic"])
    return AnthropicModel("claude-sonnet-4-6", client=endpoint.anthropic()), endpoint


def responses_model(wire: WireServer, fault: Fault) -> tuple[Model, Endpoint]:
    endpoint = Endpoint(wire, fault, BODIES["openai"])
    return OpenAIResponsesModel("gpt-5", client=endpoint.openai()), endpoint


def chat_model(wire: WireServer, fault: Fault) -> tuple[Model, Endpoint]:
    endpoint = Endpoint(wire, fault, BODIES["openai"])
    return OpenAIChatModel("gpt-4o", client=endpoint.openai()), endpoint


def gemini_model(wire: WireServer, fault: Fault) -> tuple[Model, Endpoint]:
    endpoint = Endpoint(wire, fault, BODIES["gemini"])
    client = endpoint.gemini()
    model = GeminiModel("gemini-2.5-flash", client=client, max_retries=1, retry_delay=0)
    return model, endpoint


PROVIDERS: dict[str, Callable[[WireServer, Fault], tuple[Model, Endpoint]]] = {
    "anthropic": anthropic_model,
    "openai-responses": responses_model,
    "openai-chat": chat_model,
    "gemini": gemini_model,
}


def kind_of(message: str) -> Kind | None:
    """The kind whose sentence `message` is (every placeholder matching any text)."""
    for kind, sentence in SENTENCES.items():
        pattern = re.sub(r"\\\{[^}]*\\\}", ".*", re.escape(sentence))
        if re.fullmatch(pattern, message, re.DOTALL):
            return kind
    return None


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_fault_means_the_same_on_every_provider(
    wire_server: WireServer, fault: Fault
) -> None:
    outcomes: dict[str, tuple[type[BaseException], Kind | None, int]] = {}
    for name, build in PROVIDERS.items():
        model, endpoint = build(wire_server, fault)
        transcript = Transcript([UserText("Hi")])
        with pytest.raises(ProviderError) as caught:
            await model.send(model.render(transcript, ()), session_id=transcript.id)
        outcomes[name] = (type(caught.value), kind_of(str(caught.value)), endpoint.requests)
    kind = FAULTS[fault]
    requests = 2 if kind in RETRIED else 1  # max_retries=1 everywhere
    # A server that kept failing, no answer, no connection: an outage a fleet waits out.
    outage = ProviderUnavailable if kind in RETRIED else ProviderError
    error = RateLimited if kind is Kind.RATE_LIMITED else outage
    assert outcomes == {name: (error, kind, requests) for name in PROVIDERS}


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # the SDKs read -ms first
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),  # RFC 9110 10.2.3
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_a_retry_hint_is_read_in_each_documented_form(
    headers: dict[str, str], expected: float | None
) -> None:
    now = 1445412480.0  # 2015-10-21 07:28:00 GMT
    assert hinted_wait(httpx2.Headers(headers), now=lambda: now) == expected
