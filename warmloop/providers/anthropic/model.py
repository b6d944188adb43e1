"""Anthropic Messages API through the official `anthropic` SDK.

`render` is pure (see `anthropic_format` for the wire shape and `anthropic_cache` for the
breakpoints); `send` calls `AsyncAnthropic.messages.create`, on the running event loop's own
client (`loop_clients`), and parses the reply into an
assistant turn whose raw content blocks are kept for the exact echo the API expects
(thinking signatures), plus a normalised `Usage` with every cache counter.

`diagnose=True` asks Anthropic's cache diagnostics on every request (beta header
`cache-diagnosis-2026-04-07`, `diagnostics.previous_message_id` = the response to the
request this one continues, null on a conversation's first; see `wire.verdict`): the
reply's verdict lands on `ModelResponse.verdict`, and the run sets it beside the guard's own
check. The fields go only on the wire, never into the rendered payload the guard compares.

Faults: the SDK itself retries rate limits (429), overloads (529), other 5xx, 408/409 and
timeouts with backoff (`max_retries`, `timeout`); what is still failing after that, and
authentication or invalid-request errors (never retried), become `ProviderError` by the
one mapping every provider shares (`failures`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anthropic

from warmloop.errors import ConfigurationError, ProviderError
from warmloop.facts.model_facts import table_facts
from warmloop.messages import JsonValue
from warmloop.providers.anthropic.cache import CacheTTL, cache_control
from warmloop.providers.anthropic.format import AnthropicRenderer, parse_reply
from warmloop.providers.anthropic.readers import BETA, read_verdict
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets, sdk_clients
from warmloop.providers.deltas import Delta, TextDelta, ToolCallDelta
from warmloop.providers.failures import Failures, library_network_errors, stainless_errors
from warmloop.providers.loop_clients import LoopClients
from warmloop.providers.registry import provider_record
from warmloop.providers.streamed import cut_short, read_stream
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.comparison import Baselines

PREFIX = "anthropic"
RECORD = provider_record(PREFIX)
"""Its key variable, client and error mapping (`providers.builtin`)."""

# ValueError: the SDK refuses non-streaming requests it expects to run over 10 minutes. A
# stream cut mid-event comes through the SDK as its HTTP library's own error.
_ERRORS = stainless_errors(anthropic, ValueError)
ERRORS = replace(_ERRORS, network=(*_ERRORS.network, *library_network_errors()))


class AnthropicModel(KnownFacts):
    """A Claude model over the Messages API, with cache breakpoints placed for a warm loop.
    Its facts: the table's entry under `cache_ttl`, `max_tokens` kept for the answer, and
    `context_window` when stated."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: anthropic.AsyncAnthropic | Callable[[], anthropic.AsyncAnthropic] | None = None,
        max_tokens: int = 4096,
        cache_ttl: CacheTTL = "5m",
        thinking: Mapping[str, JsonValue] | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        diagnose: bool = False,
    ) -> None:
        if not model.strip():
            raise ConfigurationError("AnthropicModel needs a model name, e.g. 'claude-sonnet-4-5'")
        if not isinstance(diagnose, bool):
            raise ConfigurationError(f"diagnose must be true or false, got {diagnose!r}")
        self.diagnose = diagnose
        self._baselines = Baselines()
        if max_tokens < 1:
            raise ConfigurationError(f"max_tokens must be >= 1, got {max_tokens}")
        budget = (thinking or {}).get("budget_tokens")
        if isinstance(budget, int) and budget >= max_tokens:
            raise ConfigurationError(
                f"thinking budget_tokens ({budget}) must be below max_tokens ({max_tokens}); "
                "raise max_tokens or lower the budget"
            )
        self.model = model
        self.name = f"{PREFIX}:{model}"
        self.cache_ttl = cache_ttl
        head: dict[str, JsonValue] = {"model": model, "max_tokens": max_tokens}
        if thinking is not None:
            head["thinking"] = dict(thinking)
        self._renderer = AnthropicRenderer(head, cache_control(cache_ttl))  # checks the TTL
        self.facts = table_facts(
            self.name, retention=cache_ttl, context_window=context_window, output_reserve=max_tokens
        )
        self._clients: LoopClients[anthropic.AsyncAnthropic] = sdk_clients(
            RECORD.client_class(),
            client,
            key=lambda: find_key(api_key, *RECORD.key_variables),
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )
        self._client = self._clients.client  # the settings; each loop sends with its own
        secrets = client_secrets(self._client.api_key, base_url)
        self._failures = Failures(self.name, model, RECORD.key_names, RECORD.sdk_errors(), secrets)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the `messages.create` keyword arguments and their prefix stream."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """One Messages request. Anthropic routes caches by prefix, so `session_id` only
        finds the previous response of the conversation (`diagnose`)."""
        # The SDK retried what was worth retrying (`max_retries`) before it raised.
        asked, earlier = self._diagnostics(rendered, session_id)
        with self._failures.mapped(tries="the SDK's retries"):
            client = await self._clients.current()
            message = await client.messages.create(**rendered.payload, **asked)
            response = parse_reply(
                message, rendered.turn_index, name=self.name, cache_ttl=self.cache_ttl
            )
        return self._diagnosed(response, message, rendered, session_id, earlier)

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """`send`, streamed: the same body with `stream: true` ("Streaming Messages",
        https://docs.claude.com/en/docs/build-with-claude/streaming). Text and tool input
        go to `deltas` as their `content_block_delta` events come; the SDK accumulates the
        message, its usage from `message_start` (input and cache counters) and
        `message_delta` (output), which `parse_reply` reads as it reads a whole reply."""
        asked, earlier = self._diagnostics(rendered, session_id)
        with self._failures.mapped(tries="the SDK's retries"), read_stream(self.name):
            client = await self._clients.current()
            async with client.messages.stream(**rendered.payload, **asked) as stream:
                calls: dict[int, int] = {}  # content block index -> the call's place
                stopped = False
                async for event in assembled(stream, self.name):
                    if event.type == "content_block_start":
                        block = event.content_block
                        if block.type == "tool_use":
                            calls[event.index] = len(calls)
                            deltas(ToolCallDelta(calls[event.index], block.name, block.id))
                    elif event.type == "content_block_delta":
                        piece = event.delta
                        if piece.type == "text_delta":
                            deltas(TextDelta(piece.text))
                        elif piece.type == "input_json_delta" and event.index in calls:
                            deltas(ToolCallDelta(calls[event.index], arguments=piece.partial_json))
                    elif event.type == "message_stop":
                        stopped = True
                if not stopped:
                    raise cut_short(self.name, "message_stop")
                message = await stream.get_final_message()
            response = parse_reply(
                message, rendered.turn_index, name=self.name, cache_ttl=self.cache_ttl
            )
        return self._diagnosed(response, message, rendered, session_id, earlier)

    def _diagnostics(
        self, rendered: Rendered, session_id: str
    ) -> tuple[dict[str, Any], str | None]:
        """The diagnostics fields for the wire (none without `diagnose`), and the response
        they compare with."""
        if not self.diagnose:
            return {}, None
        earlier = self._baselines.find(rendered.wire, session_id)
        asked = {
            "diagnostics": {"previous_message_id": earlier},
            "extra_headers": {"anthropic-beta": BETA},
        }
        return asked, earlier

    def _diagnosed(
        self,
        response: ModelResponse,
        message: Any,
        rendered: Rendered,
        session_id: str,
        earlier: str | None,
    ) -> ModelResponse:
        """`response` with the provider's verdict on it, when `diagnose` asked for one."""
        if not self.diagnose:
            return response
        self._baselines.remember(rendered.wire, session_id, message.id)
        found = getattr(message, "diagnostics", None)
        # `diagnostics: null` after naming a previous message: no divergence was found.
        raw = found.to_dict(mode="json") if found is not None else ({} if earlier else None)
        return replace(response, verdict=read_verdict(raw, compared_with=earlier))


async def assembled(stream: AsyncIterator[Any], name: str) -> AsyncIterator[Any]:
    """The SDK's stream events; one it cannot add to the message it puts together (a
    `message_delta` without the documented `usage`) is a ProviderError, not its own
    AttributeError."""
    try:
        async for event in stream:
            yield event
    except (AttributeError, TypeError, KeyError) as exc:
        raise ProviderError(
            f"{name}: malformed stream: the events do not make a message ({exc}); a "
            "documented stream carries `usage` in message_start and message_delta; try again"
        ) from exc
