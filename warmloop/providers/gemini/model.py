"""Google Gemini through the official google-genai SDK (`client.aio.models.generate_content`),
`gemini:<model>`.

`render` is pure (`gemini_format`); `send` calls the SDK (the running event loop's own
client, `loop_clients`) with warmloop's own retries (`gemini_retry`: the SDK's ignore how
long the server asks to wait), and what still fails becomes a `ProviderError` (`failures`).
Gemini has no routing key: its cache is implicit.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from warmloop.errors import ConfigurationError, ProviderError
from warmloop.facts.model_facts import table_facts
from warmloop.messages import JsonValue
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets
from warmloop.providers.deltas import Delta
from warmloop.providers.failures import Failures, attempts
from warmloop.providers.gemini.format import GeminiRenderer, parse_reply
from warmloop.providers.gemini.reply_stream import streamed_reply
from warmloop.providers.gemini.retry import GaveUp, with_retries
from warmloop.providers.loop_clients import LoopClients, given_clients
from warmloop.providers.registry import provider_record
from warmloop.providers.streamed import read_stream
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

Chunks = AsyncIterator[types.GenerateContentResponse]
RECORD = provider_record("gemini")
"""Its key variables, client and error mapping (`providers.builtin`)."""


class GeminiModel(KnownFacts):
    """A Gemini model (`gemini:<model>`) called through the official google-genai SDK.

    Retries 408/409/429/5xx and network failures (`max_retries` after the first attempt),
    waiting what the server asks (`Retry-After`, `RetryInfo`) or else an exponential backoff
    from `retry_delay` seconds (`gemini_retry`); other errors fail at once.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: genai.Client | Callable[[], genai.Client] | None = None,
        max_retries: int = 4,
        retry_delay: float = 1.0,
        timeout: float = 600.0,
        thinking_budget: int | None = None,
        include_thoughts: bool = True,
        base_url: str | None = None,
        context_window: int | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigurationError("GeminiModel needs a model name, e.g. gemini-2.5-flash")
        if max_retries < 0 or retry_delay < 0 or timeout <= 0:
            raise ConfigurationError("max_retries and retry_delay must be >= 0, timeout > 0")
        if thinking_budget is not None and thinking_budget < -1:
            raise ConfigurationError("thinking_budget must be -1 (dynamic), 0 (off) or more")
        self.name = f"gemini:{model}"
        self.facts = table_facts(self.name, context_window=context_window)
        thinking: dict[str, JsonValue] = {}
        if include_thoughts:  # thought summaries become AssistantTurn.reasoning
            thinking["include_thoughts"] = True
        if thinking_budget is not None:
            thinking["thinking_budget"] = thinking_budget
        params: dict[str, JsonValue] = {"thinking_config": thinking} if thinking else {}
        self._renderer = GeminiRenderer(model, params=params)
        self.attempts = max_retries + 1
        self.retry_delay = retry_delay
        # Per request, so the settings also hold for an injected client: one attempt each,
        # since warmloop retries itself (the SDK's retries ignore Retry-After).
        self._http_options = types.HttpOptions(
            timeout=max(1, round(timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._clients: LoopClients[genai.Client] = gemini_clients(client, api_key, base_url)
        self._client = self._clients.client  # the settings; each loop sends with its own
        # The SDK keeps the key on its API client (there is no public accessor).
        secrets = client_secrets(self._client._api_client.api_key, base_url)
        self._failures = Failures(self.name, model, RECORD.key_names, RECORD.sdk_errors(), secrets)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """One generate_content call; Gemini has no routing key, so `session_id` is unused."""
        payload = rendered.payload
        config = self._config(payload)
        with self._calling():
            client = await self._clients.current()
            response = await with_retries(
                lambda: client.aio.models.generate_content(
                    model=payload["model"], contents=payload["contents"], config=config
                ),
                attempts=self.attempts,
                delay=self.retry_delay,
            )
            return parse_reply(response, rendered.turn_index, name=self.name)

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """`send`, streamed: the same body to `streamGenerateContent?alt=sse`, retried as
        `send` is until its first chunk comes; the chunks put back together
        (`gemini_stream`) are parsed as a whole reply, usage from the last."""
        payload = rendered.payload
        config = self._config(payload)

        async def opened() -> tuple[Chunks, types.GenerateContentResponse | None]:
            client = await self._clients.current()
            chunks = await client.aio.models.generate_content_stream(
                model=payload["model"], contents=payload["contents"], config=config
            )
            return chunks, await anext(chunks, None)  # the request is made here

        with self._calling(), read_stream(self.name):
            chunks, first = await with_retries(
                opened, attempts=self.attempts, delay=self.retry_delay
            )
            reply = await streamed_reply(first, chunks, deltas, self.name)
            return parse_reply(reply, rendered.turn_index, name=self.name)

    def _config(self, payload: dict[str, Any]) -> types.GenerateContentConfig:
        return types.GenerateContentConfig(
            **payload["config"],
            # Our loop runs the tools: the SDK must never call functions on its own.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            http_options=self._http_options,
        )

    @contextmanager
    def _calling(self) -> Iterator[None]:
        """Around a call and the reading of its reply: what fails is a ProviderError."""
        with self._failures.mapped(tries=attempts(self.attempts)):
            try:
                yield
            except GaveUp as exc:
                tries = attempts(exc.attempts)
                self._failures.raise_for(exc.error, tries=tries, asked=exc.asked)
            except genai_errors.UnknownApiResponseError as exc:  # a reply or event not JSON
                raise ProviderError(
                    f"{self.name}: malformed reply: the body or a streamed event's data is not "
                    "JSON; try again"
                ) from exc
            except pydantic.ValidationError as exc:  # JSON, but not a GenerateContentResponse
                where = ".".join(str(p) for p in exc.errors()[0]["loc"]) if exc.errors() else "?"
                raise ProviderError(
                    f"{self.name}: malformed reply: {where} does not have the documented shape "
                    f"({exc.error_count()} problem(s)); try again or check the model name"
                ) from exc


def gemini_clients(
    given: genai.Client | Callable[[], genai.Client] | None,
    api_key: str | None,
    base_url: str | None,
) -> LoopClients[genai.Client]:
    """The google-genai clients a model sends with, one per event loop (`loop_clients`):
    what the caller passed, else made from the key and base URL."""
    if given is not None:
        return given_clients(given, _close)
    options = types.HttpOptions(base_url=base_url) if base_url else None
    key = find_key(api_key, *RECORD.key_variables)
    make = functools.partial(RECORD.client_class(), api_key=key, http_options=options)
    return LoopClients.made(make, _close)


async def _close(client: genai.Client) -> None:
    await client.aio.aclose()
