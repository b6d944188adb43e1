"""The OpenAI Responses API, used statelessly (`store=False`): every request carries it all.

`render` is pure and memoised per message (a step's work is proportional to what is new).
The first system text becomes `instructions`; every other message becomes `input` items in
place: notices as `<system-reminder>` developer text (never hoisted into `instructions`),
assistant turns as the raw output items the API returned (reasoning items with their
`encrypted_content`, messages, function calls) echoed verbatim, tool results as
`function_call_output` items. `send` adds `prompt_cache_key` (the session id), calls the
official SDK and parses the reply; the SDK retries 429/5xx/timeouts itself, and what
still fails becomes a `ProviderError` (`failures`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from warmloop.cache.facts import table_facts
from warmloop.cache.usage import Usage, count, prompt_split
from warmloop.cache.wire import RESPONSES, Canonicalizer
from warmloop.errors import ConfigurationError, ProviderError
from warmloop.messages import (
    AssistantTurn,
    JsonValue,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.protocols.inline import inline_text
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.chat_format import ERROR_PREFIX
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets, sdk_client
from warmloop.providers.failures import Failures, read_body, retries, stainless_errors
from warmloop.providers.memo import AppendMemo, ToolsMemo
from warmloop.providers.openai_cache import marked_text, retention_params, takes_breakpoints
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

DETAILS_KEY = "openai_responses"
"""`AssistantTurn.provider_details[DETAILS_KEY]` holds the raw output items, echoed verbatim."""
KEY_VARIABLE = "OPENAI_API_KEY"
INCLUDE = ("reasoning.encrypted_content",)
Item = dict[str, JsonValue]


TOOL_SEARCH: Item = {"type": "tool_search"}
"""Hosted tool search, sent first whenever a function is deferred (Tools > Tool search:
`defer_loading: true` functions keep their parameter schemas out of the context until the
model's search loads them, injected at the end of the context)."""


def wire_tools(tools: Sequence[ToolSpec]) -> list[Item]:
    """Function tools in Responses format.

    `strict` is off: strict mode demands every property be required, which optional tool
    arguments are not; the loop validates arguments itself and reports errors to the model.
    """
    items: list[Item] = [dict(TOOL_SEARCH)] if any(t.defer_loading for t in tools) else []
    for t in tools:
        item: Item = {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": False,
        }
        if t.defer_loading:
            item["defer_loading"] = True
        items.append(item)
    return items


def _text_message(role: str, text: str) -> Item:
    return {"type": "message", "role": role, "content": text}


def assistant_items(turn: AssistantTurn) -> list[Item]:
    """An assistant turn as input items: its raw output items if it came from this API."""
    raw = turn.provider_details.get(DETAILS_KEY)
    if isinstance(raw, list):
        # A private copy: the payload goes to the SDK, and the transcript must stay as is.
        echoed: list[Item] = copy.deepcopy(raw)
        calls = [i for i in echoed if isinstance(i, dict) and i.get("type") == "function_call"]
        if len(calls) == len(turn.tool_calls):
            # The turn's ids, matched in order: a repeated call_id was renamed, and the
            # function_call_output items carry the new one.
            for item, call in zip(calls, turn.tool_calls, strict=True):
                item["call_id"] = call.id
        return echoed
    # A turn from another provider: rebuild it (its reasoning has no form this API accepts).
    items: list[Item] = []
    if turn.text or not turn.tool_calls:
        items.append(_text_message("assistant", turn.text))
    items.extend(
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
        for c in turn.tool_calls
    )
    return items


def input_items(message: Message) -> list[Item]:
    """One transcript message as `input` items, in place."""
    if isinstance(message, UserText):
        return [_text_message("user", message.text)]
    if isinstance(message, AssistantTurn):
        return assistant_items(message)
    if isinstance(message, ToolResult):
        content = ERROR_PREFIX + message.content if message.is_error else message.content
        return [{"type": "function_call_output", "call_id": message.call_id, "output": content}]
    if isinstance(message, Notice | SystemText):
        # The API has a mid-conversation role for instructions: use it, wrapped, in place.
        return [_text_message("developer", inline_text(message))]
    if isinstance(message, Summary):
        return [_text_message("user", inline_text(message))]
    raise TypeError(f"unknown message kind: {message!r}")


class ResponsesRenderer:
    """Renders transcripts to `responses.create` kwargs, memoising each message's items."""

    def __init__(
        self, model: str, params: dict[str, JsonValue], *, breakpoint: bool = False
    ) -> None:
        self.head: dict[str, JsonValue] = {"model": model, **params}
        self.breakpoint = breakpoint
        """Open with a developer message that carries an explicit cache breakpoint instead
        of `instructions` (a string, which cannot carry one): GPT-5.6 and later."""
        self._memo = AppendMemo()
        self._instructions: str | None = None
        self._items: list[Item] = []
        self._tools = ToolsMemo(wire_tools)
        self._canon = Canonicalizer(RESPONSES)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        payload: dict[str, Any] = dict(self.head)
        if tools:
            payload["tools"] = self._tools.get(tools)
        self._sync_messages(transcript)
        if self._instructions is not None:
            payload["instructions"] = self._instructions
        payload["input"] = list(self._items)
        return Rendered(payload, self._canon.stream, transcript.assistant_turns())

    def _sync_messages(self, transcript: Transcript) -> None:
        """Bring the memo up to date; start over after a rewrite or on another transcript."""
        start, new = self._memo.sync(transcript)
        if not start:
            self._instructions, self._items = None, []
        for message in new:
            if isinstance(message, SystemText) and self._instructions is None and not self._items:
                # The opening system text is the session's instructions: it never changes,
                # so it sits in the cached prefix; later system text stays in place.
                if self.breakpoint:  # ...and its end is where every session's cache starts
                    content = marked_text(message.text, "input_text")
                    self._items.append({"type": "message", "role": "developer", "content": content})
                else:
                    self._instructions = message.text
                continue
            self._items.extend(input_items(message))


def _as_dict(value: object) -> dict[str, Any] | None:
    """A JSON object as a dict: SDK models (built without validation) by their dump."""
    if isinstance(value, dict):
        return value
    dump = getattr(value, "to_dict", None)
    if callable(dump):
        found = dump(mode="json")
        return found if isinstance(found, dict) else None
    return None


def parse_usage(usage: object) -> Usage:
    """Normalise Responses usage: `input_tokens` counts all input, cached and written included.

    GPT-5.6 and later bill writes (`input_tokens_details.cache_write_tokens`), split by
    retention in `cache_write_tokens_details` (`ttl_30m_tokens`, `ttl_12h_tokens`); reads
    and writes never add up to more than the input. Reasoning tokens are part of
    `output_tokens` (billed as output) and reported apart in `reasoning_tokens`.
    """
    data = _as_dict(usage)
    if data is None:
        return Usage()
    details = data.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    uncached, read, written = prompt_split(
        data.get("input_tokens"), details.get("cached_tokens"), details.get("cache_write_tokens")
    )
    split = details.get("cache_write_tokens_details")
    long_writes = count(split.get("ttl_12h_tokens")) if isinstance(split, dict) else 0
    reasoning = data.get("output_tokens_details")
    return Usage(
        uncached,
        read,
        written,
        count(data.get("output_tokens")),
        cache_write_12h_tokens=min(long_writes, written),
        reasoning_tokens=count(reasoning.get("reasoning_tokens"))
        if isinstance(reasoning, dict)
        else 0,
    )


def _texts(parts: object, *keys: str) -> list[str]:
    found = []
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict):
            found += [part[k] for k in keys if isinstance(part.get(k), str)]
    return found


def parse_turn(raw_items: list[Item]) -> AssistantTurn:
    """The assistant turn of a response's `output` items, which are kept to echo verbatim.
    An item that cannot be read is a ProviderError naming it."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for index, item in enumerate(raw_items):
        if not isinstance(item, dict):
            raise ProviderError(f"malformed response: output item {index} is not an object")
        kind = item.get("type")
        if kind == "message":
            texts += _texts(item.get("content"), "text", "refusal")
        elif kind == "reasoning":
            reasoning += _texts(item.get("summary") or item.get("content"), "text")
        elif kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str) or not name:
                raise ProviderError(
                    f"malformed response: function call {index} has no call_id or name"
                )
            arguments = item.get("arguments")
            calls.append(ToolCall(call_id, name, arguments if isinstance(arguments, str) else "{}"))
    return AssistantTurn(
        text="\n\n".join(t for t in texts if t),
        reasoning="\n\n".join(r for r in reasoning if r),
        tool_calls=tuple(calls),
        provider_details={DETAILS_KEY: raw_items},
    )


def parse_body(body: dict[str, Any], model: str) -> ModelResponse:
    """A response body as a ModelResponse; a failed or malformed one as a ProviderError."""
    error = body.get("error")
    if error is not None or body.get("status") == "failed":
        detail = error.get("message") if isinstance(error, dict) else None
        raise ProviderError(
            f"OpenAI reported the response as failed ({detail or 'no detail given'}); try "
            f"again, or check the request options for model {model!r}"
        )
    output = body.get("output")
    if not isinstance(output, list):
        raise ProviderError(
            f"malformed response from OpenAI for model {model!r}: `output` is "
            f"{'missing' if output is None else 'not a list'}; try again"
        )
    return ModelResponse(parse_turn(output), parse_usage(body.get("usage")))


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
        secrets = client_secrets(self.client.api_key, base_url)
        self._failures = Failures(
            self.name, model, KEY_VARIABLE, ERRORS, secrets, status_style="HTTP {code}"
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
        # The routing key is the session id: constant for a session, kept out of the stream.
        kwargs: dict[str, Any] = {**rendered.payload, "prompt_cache_key": session_id}
        # The SDK walks every param through its TypedDict transform, about 3 ms per input
        # item: a whole session's worth of client CPU on every step. The items are wire
        # JSON already, so they go into the body untouched.
        kwargs["extra_body"] = {"input": kwargs.pop("input")}
        # The SDK retried what was worth retrying (`max_retries`) before it raised.
        with self._failures.mapped(tries=retries(self.client.max_retries)):
            raw = await self.client.responses.with_raw_response.create(**kwargs)
            return parse_body(read_body(raw.content, self.name), self.model)
