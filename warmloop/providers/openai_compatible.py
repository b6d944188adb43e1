"""Chat Completions through the official `openai` SDK: OpenAI, DeepSeek, and OpenAI-compatible
servers (vLLM, SGLang, llama.cpp server, Ollama).

Rendering is `chat_format.ChatRenderer` (pure, memoised per message). This module is the I/O
edge: `send` puts a rendered payload on the wire with the session id as `prompt_cache_key`
(a routing key, so never part of the prefix stream) and parses the reply into an
`AssistantTurn` and a normalised `Usage`. Retries of 408/409/429/5xx and timeouts are the
SDK's own (`max_retries`, `timeout`); whatever still fails becomes a `ProviderError`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI
from openai.resources.chat.completions.completions import AsyncCompletions
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from warmloop.cache.usage import Usage
from warmloop.errors import ConfigurationError, ProviderError
from warmloop.protocols import react_text
from warmloop.providers.base import ModelResponse, Rendered, text_protocol_reply
from warmloop.providers.chat_format import DETAILS_KEY, ChatRenderer
from warmloop.providers.overflow import context_overflow
from warmloop.providers.select import api_key as require_key
from warmloop.tools import ToolSpec
from warmloop.transcript import AssistantTurn, JsonValue, ToolCall, Transcript

OPENAI_KEY = "OPENAI_API_KEY"
DEEPSEEK_KEY = "DEEPSEEK_API_KEY"
SERVER_KEY = "OPENAI_COMPATIBLE_API_KEY"
"""A self-hosted server's key has its own variable: OPENAI_API_KEY must never be sent to
whatever URL a user names."""
DEEPSEEK_URL = "https://api.deepseek.com"
PLACEHOLDER_KEY = "not-needed"
"""Sent to OpenAI-compatible servers when no key is set: the SDK needs one, local servers
don't check it."""
DEFAULT_SERVER_MODEL = "default"
DEFAULT_MAX_RETRIES = 2
DEFAULT_TIMEOUT = 600.0
TEXT_STOP = ["Observation:"]
"""Stop sequence for the text protocol: a model that goes on to invent the observation would
otherwise write past its Action, which the parser rejects."""

# create()'s own keyword arguments; anything else in the payload (e.g. llama.cpp's `grammar`)
# travels in `extra_body`, so engine-specific parameters work without SDK support.
_CREATE_PARAMS = frozenset(inspect.signature(AsyncCompletions.create).parameters) - {
    "self",
    "extra_headers",
    "extra_query",
    "extra_body",
    "timeout",
}
_CLIENT_ERRORS = (400, 404, 409, 413, 422)


def _count(value: object) -> int:
    """A token count from a loosely typed field (servers send ints; junk counts as 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from(completion: ChatCompletion) -> Usage:
    """Normalise a completion's usage: `input_tokens` uncached, `cache_read_tokens` cached.

    Reads, in order: DeepSeek's `prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`,
    OpenAI's `prompt_tokens_details.cached_tokens` (and `cache_write_tokens`), and the
    llama.cpp server's `timings.cache_n`/`prompt_n`.
    """
    timings = (completion.model_extra or {}).get("timings")
    timings = timings if isinstance(timings, dict) else {}
    usage = completion.usage
    if usage is None:  # some servers omit usage but still report their timings
        return Usage(
            input_tokens=_count(timings.get("prompt_n")),
            cache_read_tokens=_count(timings.get("cache_n")),
            output_tokens=_count(timings.get("predicted_n")),
        )
    extra = usage.model_extra or {}
    details = usage.prompt_tokens_details
    write = _count(details.cache_write_tokens) if details else 0
    if "prompt_cache_hit_tokens" in extra:
        read = _count(extra["prompt_cache_hit_tokens"])
        if "prompt_cache_miss_tokens" in extra:
            return Usage(
                input_tokens=_count(extra["prompt_cache_miss_tokens"]),
                cache_read_tokens=read,
                output_tokens=usage.completion_tokens,
            )
    elif details is not None and details.cached_tokens is not None:
        read = _count(details.cached_tokens)
    else:
        read = _count(timings.get("cache_n"))
    return Usage(
        input_tokens=max(usage.prompt_tokens - read - write, 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=usage.completion_tokens,
    )


def _details(message: ChatCompletionMessage) -> dict[str, JsonValue]:
    """Assistant fields the next request must echo back (chat_format writes them out)."""
    extra = message.model_extra or {}
    details: dict[str, JsonValue] = {}
    # DeepSeek's thinking mode requires reasoning_content back on tool-call turns.
    if isinstance(extra.get("reasoning_content"), str):
        details["reasoning_content"] = extra["reasoning_content"]
    if message.refusal is not None:
        details["refusal"] = message.refusal
    return details


def turn_from(message: ChatCompletionMessage, turn_index: int) -> AssistantTurn:
    """A native-tools reply as an AssistantTurn; tool-call arguments kept byte-for-byte."""
    calls = []
    for index, item in enumerate(message.tool_calls or ()):
        if item.type != "function":
            raise ProviderError(
                f"the model returned a {item.type!r} tool call, but only function tools were "
                "offered; this server's tool-calling output is not supported, try "
                "text_protocol=True"
            )
        # A server that sends no id still needs one to pair the result (I4: deterministic).
        call_id = item.id or react_text.call_id(turn_index, index)
        calls.append(ToolCall(call_id, item.function.name, item.function.arguments))
    details = _details(message)
    reasoning = details.get("reasoning_content")
    return AssistantTurn(
        text=message.content or "",
        reasoning=reasoning if isinstance(reasoning, str) else "",
        tool_calls=tuple(calls),
        provider_details={DETAILS_KEY: details} if details else {},
    )


def parse_completion(
    completion: ChatCompletion, turn_index: int, *, text_protocol: bool = False
) -> ModelResponse:
    """The reply's first choice as a ModelResponse (format_error set if text didn't parse)."""
    usage = usage_from(completion)
    if not completion.choices:
        raise ProviderError(
            f"the reply from model {completion.model!r} has no choices; the server returned "
            "an empty completion, retry the request or check the server's logs"
        )
    message = completion.choices[0].message
    if not text_protocol:
        return ModelResponse(turn_from(message, turn_index), usage)
    text = message.content or ""
    details = _details(message)
    echo: dict[str, JsonValue] = {DETAILS_KEY: details} if details else {}
    return text_protocol_reply(text, turn_index, usage, echo)


def provider_error(exc: openai.OpenAIError, name: str, key_variable: str) -> ProviderError:
    """A final SDK failure as a ProviderError saying what went wrong and what to do (a
    prompt over the context window as ContextWindowExceeded)."""
    if isinstance(exc, openai.APIStatusError):
        found = context_overflow(name, exc.message, exc.body)
        if found is not None:
            return found
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(
            f"{name}: no reply within the timeout, retries included; raise timeout= or "
            "max_retries=, or check that the server is not overloaded"
        )
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError(
            f"{name}: cannot connect ({exc}); check that the server is running and the "
            "base URL is right"
        )
    if not isinstance(exc, openai.APIStatusError):
        return ProviderError(f"{name}: request failed: {exc}")
    status = exc.status_code
    detail = exc.message
    if status in (401, 403):
        return ProviderError(
            f"{name}: authentication failed ({status}): {detail}; check the API key in "
            f"{key_variable} and that it may use this model"
        )
    if status in _CLIENT_ERRORS:
        return ProviderError(
            f"{name}: the request was rejected ({status}): {detail}; check the model name, "
            "the base URL and the request parameters"
        )
    if status == 429:
        return ProviderError(
            f"{name}: rate limited (429), retries exhausted: {detail}; wait and run again, "
            "or raise max_retries="
        )
    return ProviderError(
        f"{name}: the server failed ({status}), retries exhausted: {detail}; try again "
        "later or raise max_retries="
    )


def make_client(key: str, base_url: str | None, *, max_retries: int, timeout: float) -> AsyncOpenAI:
    """An AsyncOpenAI client with warmloop's retry and timeout settings."""
    if max_retries < 0 or timeout <= 0:
        raise ConfigurationError("max_retries must be >= 0 and timeout > 0 (seconds)")
    return AsyncOpenAI(api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout)


class ChatCompletionsModel:
    """A Model speaking Chat Completions through an AsyncOpenAI client."""

    def __init__(
        self,
        name: str,
        model: str,
        client: AsyncOpenAI,
        *,
        key_variable: str = OPENAI_KEY,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        cache_key: bool = True,
    ) -> None:
        self.name = name
        self.client = client
        self.key_variable = key_variable
        self.text_protocol = text_protocol
        self.cache_key = cache_key
        merged = dict(params or {})
        if text_protocol:
            merged.setdefault("stop", TEXT_STOP)
        self._renderer = ChatRenderer(model, text_protocol=text_protocol, params=merged)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the Chat Completions payload and its prefix stream (chat_format)."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send one request (the SDK retries transient faults) and parse the reply."""
        kwargs: dict[str, Any] = {}
        extra_body: dict[str, Any] = {}
        for key, value in rendered.payload.items():
            (kwargs if key in _CREATE_PARAMS else extra_body)[key] = value
        if self.cache_key:
            kwargs["prompt_cache_key"] = session_id
        if extra_body:
            kwargs["extra_body"] = extra_body
        try:
            completion = await self.client.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            raise provider_error(exc, self.name, self.key_variable) from exc
        if not isinstance(completion, ChatCompletion):
            raise ProviderError(
                f"{self.name}: expected a chat completion, got {type(completion).__name__}; "
                "do not set stream=True in params"
            )
        return parse_completion(completion, rendered.turn_index, text_protocol=self.text_protocol)


class OpenAIChatModel(ChatCompletionsModel):
    """OpenAI's own Chat Completions (`openai-chat:<model>`); needs OPENAI_API_KEY."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_cache_retention: str | None = None,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        base_url: str | None = None,
    ) -> None:
        merged = dict(params or {})
        if prompt_cache_retention is not None:
            merged["prompt_cache_retention"] = prompt_cache_retention
        if client is None:
            key = api_key or require_key(OPENAI_KEY)
            client = make_client(key, base_url, max_retries=max_retries, timeout=timeout)
        super().__init__(
            f"openai-chat:{model}",
            model,
            client,
            text_protocol=text_protocol,
            params=merged,
        )


class DeepSeekModel(ChatCompletionsModel):
    """DeepSeek (`deepseek:<model>`); needs DEEPSEEK_API_KEY. Echoes `reasoning_content`."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        base_url: str = DEEPSEEK_URL,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
    ) -> None:
        if client is None:
            key = api_key or require_key(DEEPSEEK_KEY)
            client = make_client(key, base_url, max_retries=max_retries, timeout=timeout)
        # DeepSeek's disk cache matches prefixes from token 0 with no routing, and its docs
        # list no prompt_cache_key: sending one would only risk a rejected parameter.
        super().__init__(
            f"deepseek:{model}",
            model,
            client,
            key_variable=DEEPSEEK_KEY,
            text_protocol=text_protocol,
            params=params,
            cache_key=False,
        )


class OpenAICompatibleModel(ChatCompletionsModel):
    """A self-hosted server (`openai-compatible:<base URL>[#<model>]`): vLLM, SGLang,
    llama.cpp server, Ollama. The key is OPENAI_COMPATIBLE_API_KEY if set, else a
    placeholder (never OPENAI_API_KEY, which must not leak to another server)."""

    def __init__(
        self,
        base_url_or_name: str,
        *,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        cache_key: bool = True,
        base_url: str | None = None,
    ) -> None:
        if base_url is not None:  # then the selection string names only the model
            base_url, model = split_server_spec(f"{base_url}#{base_url_or_name}")
        else:
            base_url, model = split_server_spec(base_url_or_name)
        if client is None:
            key = api_key or os.environ.get(SERVER_KEY, "").strip() or PLACEHOLDER_KEY
            client = make_client(key, base_url, max_retries=max_retries, timeout=timeout)
        self.base_url = base_url
        super().__init__(
            f"openai-compatible:{base_url}#{model}",
            model,
            client,
            text_protocol=text_protocol,
            params=params,
            cache_key=cache_key,
            key_variable=SERVER_KEY,
        )


def split_server_spec(spec: str) -> tuple[str, str]:
    """`URL#model` -> (URL, model); the model defaults to "default"."""
    url, _, model = spec.strip().partition("#")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(
            f"openai-compatible needs the server's base URL, got {spec!r}; use e.g. "
            "openai-compatible:http://127.0.0.1:8080/v1 or ...:8080/v1#model-name"
        )
    return url, model.strip() or DEFAULT_SERVER_MODEL
