"""The OpenAI Responses API through the official `openai` SDK (`openai:<model>`).

`render` is pure (`responses_format`). `send` adds `prompt_cache_key` (the session id),
calls the SDK and parses the reply; the SDK retries 429/5xx/timeouts itself, and what still
fails becomes a `ProviderError` (`failures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from warmloop.cache.facts import table_facts
from warmloop.errors import ConfigurationError
from warmloop.messages import JsonValue
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets, sdk_client
from warmloop.providers.failures import Failures, read_body, retries, stainless_errors
from warmloop.providers.openai_cache import retention_params, takes_breakpoints
from warmloop.providers.responses_format import ResponsesRenderer, parse_reply
from warmloop.providers.routing import routing_key
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

KEY_VARIABLE = "OPENAI_API_KEY"
INCLUDE = ("reasoning.encrypted_content",)
ERRORS = stainless_errors(openai, openai.OpenAIError)


class OpenAIResponsesModel(KnownFacts):
    """A model behind the OpenAI Responses API (`openai:<model>`), with encrypted reasoning
    round-tripped and `prompt_cache_key` set to the session id."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        prompt_cache_retention: str | None = None,
        reasoning: dict[str, JsonValue] | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigurationError(
                "the OpenAI model name is empty; select a model such as openai:gpt-5"
            )
        self.model = model
        self.name = f"openai:{model}"
        self.facts = table_facts(
            self.name, retention=prompt_cache_retention, context_window=context_window
        )
        self.client = sdk_client(
            AsyncOpenAI,
            client,
            key=lambda: find_key(api_key, KEY_VARIABLE),
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )
        self._secrets = client_secrets(self.client.api_key, base_url)
        self._failures = Failures(
            self.name, model, KEY_VARIABLE, ERRORS, self._secrets, status_style="HTTP {code}"
        )
        params: dict[str, JsonValue] = {"store": False, "include": list(INCLUDE)}
        if reasoning is not None:
            params["reasoning"] = dict(reasoning)
        params |= retention_params(self.facts.profile, prompt_cache_retention)
        breakpoint = takes_breakpoints(self.facts.profile)
        self._renderer = ResponsesRenderer(model, params, breakpoint=breakpoint)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send one request; ProviderError once the SDK's retries cannot make it succeed."""
        # The routing key is the conversation id: constant for a conversation and its forks,
        # kept out of the stream (`routing`).
        key = routing_key(session_id, self._secrets)
        kwargs: dict[str, Any] = {**rendered.payload, "prompt_cache_key": key}
        # The SDK walks every param through its TypedDict transform, about 3 ms per input
        # item: a whole session's worth of client CPU on every step. The items are wire
        # JSON already, so they go into the body untouched.
        kwargs["extra_body"] = {"input": kwargs.pop("input")}
        # The SDK retried what was worth retrying (`max_retries`) before it raised.
        with self._failures.mapped(tries=retries(self.client.max_retries)):
            raw = await self.client.responses.with_raw_response.create(**kwargs)
            body = read_body(raw.content, self.name)
            return parse_reply(body, rendered.turn_index, name=self.name)
