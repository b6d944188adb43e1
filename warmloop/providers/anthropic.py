"""Anthropic Messages API through the official `anthropic` SDK.

`render` is pure (see `anthropic_format` for the wire shape and `anthropic_cache` for the
breakpoints); `send` calls `AsyncAnthropic.messages.create` and parses the reply into an
assistant turn whose raw content blocks are kept for the exact echo the API expects
(thinking signatures), plus a normalised `Usage` with every cache counter.

Faults: the SDK itself retries rate limits (429), overloads (529), other 5xx, 408/409 and
timeouts with backoff (`max_retries`, `timeout`); what is still failing after that, and
authentication or invalid-request errors (never retried), become `ProviderError` by the
one mapping every provider shares (`failures`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import anthropic
from anthropic.types import Message as AnthropicMessage

from warmloop.cache.facts import table_facts
from warmloop.cache.usage import Usage, count
from warmloop.errors import ConfigurationError, ProviderError
from warmloop.messages import AssistantTurn, JsonValue, ToolCall
from warmloop.providers.anthropic_cache import CacheTTL, cache_control
from warmloop.providers.anthropic_format import DETAILS_KEY, AnthropicRenderer
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets, sdk_client
from warmloop.providers.failures import Failures, not_json, stainless_errors
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
PREFIX = "anthropic"


def _get(value: object, name: str) -> object:
    """Field `name` of an SDK object (declared or extra) or a dict; None when absent."""
    if isinstance(value, dict):
        return value.get(name)
    found = getattr(value, name, None)
    if found is None:
        extra = getattr(value, "model_extra", None)
        found = extra.get(name) if isinstance(extra, dict) else None
    return found


def parse_usage(usage: object, cache_ttl: str) -> Usage:
    """Normalise Anthropic usage; total input is the sum of the three input counters.

    The 1h share of the writes comes from `cache_creation.ephemeral_1h_input_tokens`; a reply
    without that breakdown (or with an empty one) wrote only at our breakpoints, which all
    carry the configured TTL. Server-side compaction reports its own usage as `compaction`
    entries of `usage.iterations`, not included in the top-level fields ("Compaction",
    Usage); thinking tokens are in `output_tokens_details.thinking_tokens`.
    """
    written = count(_get(usage, "cache_creation_input_tokens"))
    split_1h = _get(_get(usage, "cache_creation"), "ephemeral_1h_input_tokens")
    if split_1h is None:
        split_1h = written if cache_ttl == "1h" else 0
    compaction = Usage()
    iterations = _get(usage, "iterations")
    for item in iterations if isinstance(iterations, list) else ():
        if _get(item, "type") == "compaction":
            compaction += Usage(
                count(_get(item, "input_tokens")),
                count(_get(item, "cache_read_input_tokens")),
                count(_get(item, "cache_creation_input_tokens")),
                count(_get(item, "output_tokens")),
            )
    return Usage(
        input_tokens=count(_get(usage, "input_tokens")),
        cache_read_tokens=count(_get(usage, "cache_read_input_tokens")),
        cache_write_tokens=written,
        output_tokens=count(_get(usage, "output_tokens")),
        cache_write_1h_tokens=min(count(split_1h), written),
        reasoning_tokens=count(_get(_get(usage, "output_tokens_details"), "thinking_tokens")),
        compaction_input_tokens=compaction.input_tokens,
        compaction_cache_read_tokens=compaction.cache_read_tokens,
        compaction_cache_write_tokens=compaction.cache_write_tokens,
        compaction_output_tokens=compaction.output_tokens,
    )


def parse_message(message: object, cache_ttl: str, name: str = PREFIX) -> ModelResponse:
    """The assistant turn (raw blocks kept for the echo) and usage of one reply; a reply
    that is not a Message, or one without `content` or `usage`, is a ProviderError."""
    if isinstance(message, str | bytes):
        raise not_json(message, name)
    if not isinstance(message, AnthropicMessage):
        raise ProviderError(f"{name}: malformed reply: expected a message, got {message!r:.60}")
    error = _get(message, "error")
    if error is not None and not isinstance(message.content, list):  # an error sent with 200
        detail = _get(error, "message") or error
        raise ProviderError(f"{name}: the API answered with an error: {str(detail)[:500]}")
    if not isinstance(message.content, list):
        raise ProviderError(f"{name}: malformed reply: the message has no `content` list")
    if message.usage is None:
        raise ProviderError(f"{name}: malformed reply: the message has no `usage`")
    for index, block in enumerate(message.content):
        if not callable(getattr(block, "to_dict", None)) or not isinstance(block.type, str):
            raise ProviderError(f"{name}: malformed reply: content block {index} has no type")
    # `to_dict` is the SDK's own request-body form of a response block (fields the API set),
    # so echoing it is what `Message.to_param()` would send back.
    blocks = [block.to_dict(mode="json") for block in message.content]
    texts, thoughts, calls = [], [], []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "thinking":
            thoughts.append(block.thinking)
        elif block.type == "tool_use":
            arguments = json.dumps(block.input, ensure_ascii=False, separators=(",", ":"))
            calls.append(ToolCall(block.id, block.name, arguments))
    details: dict[str, JsonValue] = {"content": blocks, "stop_reason": message.stop_reason}
    turn = AssistantTurn(
        text="".join(texts),
        reasoning="\n\n".join(thoughts),
        tool_calls=tuple(calls),
        provider_details={DETAILS_KEY: details},
    )
    return ModelResponse(turn, parse_usage(message.usage, cache_ttl))


# ValueError: the SDK refuses non-streaming requests it expects to run over 10 minutes.
ERRORS = stainless_errors(anthropic, ValueError)


class AnthropicModel(KnownFacts):
    """A Claude model over the Messages API, with cache breakpoints placed for a warm loop.
    Its facts: the table's entry under `cache_ttl`, `max_tokens` kept for the answer, and
    `context_window` when stated."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        max_tokens: int = 4096,
        cache_ttl: CacheTTL = "5m",
        thinking: Mapping[str, JsonValue] | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigurationError("AnthropicModel needs a model name, e.g. 'claude-sonnet-4-5'")
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
        self._client = sdk_client(
            anthropic.AsyncAnthropic,
            client,
            key=lambda: find_key(api_key, API_KEY_VARIABLE),
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )
        secrets = client_secrets(self._client.api_key, base_url)
        self._failures = Failures(self.name, model, API_KEY_VARIABLE, ERRORS, secrets)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the `messages.create` keyword arguments and their prefix stream."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """One Messages request. Anthropic routes caches by prefix, so `session_id` is unused."""
        # The SDK retried what was worth retrying (`max_retries`) before it raised.
        with self._failures.mapped(tries="the SDK's retries"):
            message = await self._client.messages.create(**rendered.payload)
            return parse_message(message, self.cache_ttl, self.name)
