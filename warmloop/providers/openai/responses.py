"""The OpenAI Responses API through the official `openai` SDK (`openai:<model>`).

`render` is pure (`responses_format`). `send` adds `prompt_cache_key` (the session id; on
OpenAI's own API, or with `cache_key=True`), calls the SDK (the running event loop's own
client, `loop_clients`) and parses the reply; the SDK retries 429/5xx/timeouts itself, and
what still fails becomes a `ProviderError` (`failures`).

`diagnose=True` (GPT-5.6 and later: the models whose profile takes cache breakpoints) asks
OpenAI's prompt cache diagnostics: `prompt_cache_options.comparison_response_id` = the
response to the request this one continues (see `wire.verdict`); the response's
`prompt_cache_diagnostics` lands on `ModelResponse.verdict`. Added on the wire only, never
to the rendered payload the guard compares.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from openai import AsyncOpenAI

from warmloop.errors import ConfigurationError, ProviderError
from warmloop.facts.model_facts import table_facts
from warmloop.facts.profiles import CacheProfile
from warmloop.messages import JsonValue
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets, sdk_clients
from warmloop.providers.deltas import Delta, TextDelta, ToolCallDelta
from warmloop.providers.failures import Failures, read_body, retries
from warmloop.providers.loop_clients import LoopClients
from warmloop.providers.openai.cache import (
    free_retention,
    retention_params,
    takes_breakpoints,
)
from warmloop.providers.openai.readers import read_verdict
from warmloop.providers.openai.responses_format import ResponsesRenderer, parse_reply
from warmloop.providers.openai.retention_refusals import RetentionRefusals
from warmloop.providers.registry import provider_record
from warmloop.providers.routing import own_host, routing_key, sends_cache_key
from warmloop.providers.streamed import cut_short, paced, read_seconds, read_stream
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.comparison import Baselines

RECORD = provider_record("openai")
"""Its key variable, client, error mapping and routing key (`providers.builtin`)."""
INCLUDE = ("reasoning.encrypted_content",)
CLOSING = ("response.completed", "response.incomplete", "response.failed")
"""The stream events that carry the whole response."""


class OpenAIResponsesModel(KnownFacts):
    """A model behind the OpenAI Responses API (`openai:<model>`), with encrypted reasoning
    round-tripped and `prompt_cache_key` set to the session id.

    `prompt_cache_retention`: the cache retention sent on every request (`in_memory`, `24h`;
    `30m`, `12h` on GPT-5.6). None: the longest one the model's table entry sells at no
    extra price (`24h` on GPT-5, GPT-5.4, GPT-4.1), else the provider's default.

    `cache_key`: whether requests carry `prompt_cache_key`. None (default): only on
    OpenAI's own API, whatever set the client's URL (`base_url`, `OPENAI_BASE_URL`, a
    `client`); another host (a
    Responses-compatible gateway, Bedrock) may reject a field it does not document, or
    ignore it, so it gets the key only with `cache_key=True`. A `client` is used as given (a
    function that makes one is called once per event loop)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: AsyncOpenAI | Callable[[], AsyncOpenAI] | None = None,
        prompt_cache_retention: str | None = None,
        reasoning: dict[str, JsonValue] | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        diagnose: bool = False,
        cache_key: bool | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigurationError(
                "the OpenAI model name is empty; select a model such as openai:gpt-5"
            )
        self.model = model
        self.name = f"openai:{model}"
        if prompt_cache_retention is None:  # a longer retention that costs nothing, if sold
            prompt_cache_retention = free_retention(self.name)
        self.facts = table_facts(
            self.name, retention=prompt_cache_retention, context_window=context_window
        )
        self.diagnose = _diagnose(diagnose, self.facts.profile, model)
        self._baselines = Baselines()
        self._clients: LoopClients[AsyncOpenAI] = sdk_clients(
            RECORD.client_class(),
            client,
            key=lambda: find_key(api_key, *RECORD.key_variables),
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )
        self.client = self._clients.client  # the settings; each loop sends with its own
        own = own_host(self.client.base_url, RECORD.hosts)  # base_url=, OPENAI_BASE_URL, client=
        self.cache_key = sends_cache_key(cache_key, own, self.facts.profile)
        """Whether requests carry `prompt_cache_key` (see the class docstring)."""
        self._secrets = client_secrets(self.client.api_key, base_url)
        self._failures = Failures(
            self.name,
            model,
            RECORD.key_names,
            RECORD.sdk_errors(),
            self._secrets,
            status_style="HTTP {code}",
        )
        params = _params(self.facts.profile, reasoning, prompt_cache_retention)
        breakpoint = takes_breakpoints(self.facts.profile)
        self._renderer = ResponsesRenderer(model, params, breakpoint=breakpoint)
        self._refusals = RetentionRefusals(self.name)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send one request; ProviderError once the SDK's retries cannot make it succeed."""
        kwargs, earlier = self._request(rendered, session_id)
        # The SDK retried what was worth retrying (`max_retries`) before it raised.
        with self._failures.mapped(tries=retries(self.client.max_retries)):
            create = (await self._clients.current()).responses.with_raw_response.create
            raw = await self._refusals.send(lambda sent: create(**sent), kwargs, session_id)
            body = read_body(raw.content, self.name)
            response = parse_reply(body, rendered.turn_index, name=self.name)
        return self._diagnosed(response, body, rendered, session_id, earlier)

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """`send`, streamed: the same body with `stream: true` ("Streaming events",
        https://platform.openai.com/docs/api-reference/responses-streaming). Text and
        function-call arguments go to `deltas` as their `.delta` events come; the
        `response.completed` event carries the whole response, its `usage` included, parsed
        as a non-streamed body is."""
        kwargs, earlier = self._request(rendered, session_id)
        with self._failures.mapped(tries=retries(self.client.max_retries)):
            with read_stream(self.name):
                client = await self._clients.current()
                events = await self._refusals.send(
                    lambda sent: client.responses.create(**sent, stream=True),
                    kwargs,
                    session_id,
                )
                async with events:  # closed at once, even when read up to its last event
                    # Each event within the timeout: comments alone cannot hold the stream.
                    seconds = read_seconds(self.client.timeout)
                    body = await streamed_body(paced(events, seconds, self.name), deltas, self.name)
            response = parse_reply(body, rendered.turn_index, name=self.name)
        return self._diagnosed(response, body, rendered, session_id, earlier)

    def _request(self, rendered: Rendered, session_id: str) -> tuple[dict[str, Any], str | None]:
        """The SDK's keyword arguments for `rendered`, and the response the diagnostics
        compare with (None without `diagnose`)."""
        # The routing key is the conversation id: constant for a conversation and its forks,
        # kept out of the stream (`routing`).
        kwargs: dict[str, Any] = dict(rendered.payload)
        field = RECORD.routing.field if RECORD.routing is not None else None
        if self.cache_key and field is not None:
            kwargs[field] = routing_key(session_id, self._secrets)
        # The SDK walks every param through its TypedDict transform, about 3 ms per input
        # item: a whole session's worth of client CPU on every step. The items are wire
        # JSON already, so they go into the body untouched.
        kwargs["extra_body"] = {"input": kwargs.pop("input")}
        earlier = self._baselines.find(rendered.wire, session_id) if self.diagnose else None
        if earlier is not None:
            options = dict(kwargs.get("prompt_cache_options") or {})
            kwargs["prompt_cache_options"] = {**options, "comparison_response_id": earlier}
        return kwargs, earlier

    def _diagnosed(
        self,
        response: ModelResponse,
        body: dict[str, Any],
        rendered: Rendered,
        session_id: str,
        earlier: str | None,
    ) -> ModelResponse:
        """`response` with OpenAI's cache diagnostics on it, when `diagnose` asked."""
        if not self.diagnose:
            return response
        if isinstance(body.get("id"), str):
            self._baselines.remember(rendered.wire, session_id, body["id"])
        found = body.get("prompt_cache_diagnostics")
        verdict = read_verdict(found, compared_with=earlier) if isinstance(found, dict) else None
        return replace(response, verdict=verdict)


async def streamed_body(
    events: AsyncIterable[Any], deltas: Callable[[Delta], None], name: str
) -> dict[str, Any]:
    """Read the SDK's stream events, each piece of text and of a call's arguments to
    `deltas`; the whole response its closing event carries (`response.completed`, or
    `.incomplete` / `.failed`, which `parse_reply` reads as a non-streamed body)."""
    calls: dict[int, int] = {}  # output index -> the call's place in the turn
    body: dict[str, Any] | None = None
    async for event in events:
        kind = event.type
        if kind == "response.output_text.delta":
            deltas(TextDelta(event.delta))
        elif kind == "response.output_item.added" and event.item.type == "function_call":
            calls[event.output_index] = len(calls)
            item = event.item
            deltas(ToolCallDelta(calls[event.output_index], item.name, item.call_id))
        elif kind == "response.function_call_arguments.delta" and event.output_index in calls:
            deltas(ToolCallDelta(calls[event.output_index], arguments=event.delta))
        elif kind in CLOSING:
            body = event.response.to_dict(mode="json")
        elif kind == "error":
            raise ProviderError(
                f"{name}: the stream reported an error: {str(event.message)[:500]}; try again"
            )
    # Read to its end, not left at the closing event: a reply read whole leaves its
    # connection to the pool (kept alive) instead of closing it.
    if body is None:
        raise cut_short(name, "response.completed")
    return body


def _diagnose(diagnose: object, profile: CacheProfile, model: str) -> bool:
    """`diagnose=` checked: a bool, and only on a model with OpenAI's cache diagnostics."""
    if not isinstance(diagnose, bool):
        raise ConfigurationError(f"diagnose must be true or false, got {diagnose!r}")
    if diagnose and not takes_breakpoints(profile):
        raise ConfigurationError(
            f"diagnose: OpenAI's prompt cache diagnostics need GPT-5.6 or later, and "
            f"{model!r} is not one; drop diagnose or select such a model"
        )
    return diagnose


def _params(
    profile: CacheProfile, reasoning: Mapping[str, JsonValue] | None, retention: str | None
) -> dict[str, JsonValue]:
    """The request parameters every request of the model carries (no storage, the
    encrypted reasoning echoed, its reasoning settings and retention)."""
    params: dict[str, JsonValue] = {"store": False, "include": list(INCLUDE)}
    if reasoning is not None:
        params["reasoning"] = dict(reasoning)
    return params | retention_params(profile, retention)
