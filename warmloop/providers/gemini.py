"""Google Gemini through the official google-genai SDK (`client.aio.models.generate_content`).

`GeminiRenderer.render` is pure and memoises per message. Leading system text becomes the
`system_instruction`; the tools are one `function_declarations` tool, the same bytes for a
whole session. Each model turn is echoed from the raw parts Gemini returned (thought
signatures included); tool results of one step, notices and follow-up user text merge into
one user turn, so roles alternate and only the newest turn ever grows. Caching is
implicit: Gemini reports hits in `usage_metadata.cached_content_token_count`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic
from google import genai
from google.genai import types

from warmloop.cache.facts import table_facts
from warmloop.cache.usage import Usage, count, prompt_split
from warmloop.cache.wire import GEMINI_SDK, Canonicalizer, dumps
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
)
from warmloop.protocols import react_text
from warmloop.protocols.inline import inline_text
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets, key_names
from warmloop.providers.failures import Failures, attempts
from warmloop.providers.gemini_retry import GEMINI_ERRORS, GaveUp, with_retries
from warmloop.providers.memo import AppendMemo, ToolsMemo
from warmloop.tools.schema import ToolSpec
from warmloop.tools.tool import parse_arguments
from warmloop.transcript import Transcript

DETAILS_KEY = "gemini"
"""`AssistantTurn.provider_details[DETAILS_KEY]["parts"]` holds the model turn's raw parts."""
API_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
EMPTY_TURN = "(empty response)"
"""Stands in for a model turn without parts: Gemini rejects a content with no parts."""
Part = dict[str, JsonValue]
Content = dict[str, JsonValue]


def wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, JsonValue]]:
    """All tools as one Gemini tool; `parameters_json_schema` takes our JSON schema as is."""
    declarations = [
        {"name": t.name, "description": t.description, "parameters_json_schema": t.parameters}
        for t in tools
    ]
    return [{"function_declarations": declarations}]


def model_parts(turn: AssistantTurn) -> list[Part]:
    """The parts of a model turn: Gemini's own raw parts when it wrote the turn, else built."""
    details = turn.provider_details.get(DETAILS_KEY)
    raw = details.get("parts") if isinstance(details, dict) else None
    if isinstance(raw, list) and raw:
        # Echoed verbatim: thought signatures are only valid next to the parts they came with.
        return echoed_ids(raw, turn.tool_calls)
    parts: list[Part] = []
    if turn.reasoning:
        parts.append({"text": turn.reasoning, "thought": True})
    if turn.text:
        parts.append({"text": turn.text})
    for call in turn.tool_calls:
        try:
            args: dict[str, Any] = parse_arguments(call.arguments)
        except ValueError:
            # Gemini's args must be an object; keep an unparseable string visible to the model.
            args = {"raw_arguments": call.arguments}
        parts.append({"functionCall": {"name": call.name, "args": args}})
    return parts or [{"text": EMPTY_TURN}]


def echoed_ids(parts: list[Part], calls: Sequence[ToolCall]) -> list[Part]:
    """Raw parts with the turn's ids on the functionCall parts that carry one, matched in
    order (a repeated id was renamed, and its functionResponse carries the new one); the
    same list where nothing was renamed."""
    if sum(isinstance(p.get("functionCall"), dict) for p in parts) != len(calls):
        return parts  # not this turn's calls (a hand-made transcript): nothing to match
    ids = iter(c.id for c in calls)
    echoed, renamed = [], False
    for part in parts:
        call = part.get("functionCall")
        if isinstance(call, dict):
            call_id = next(ids)
            if "id" in call and call["id"] != call_id:  # only a native id goes on the wire
                part = {**part, "functionCall": {**call, "id": call_id}}
                renamed = True
        echoed.append(part)
    return echoed if renamed else parts


def native_call_ids(parts: Sequence[Part]) -> set[str]:
    """Call ids Gemini itself put on functionCall parts (only these are echoed in responses)."""
    ids = set()
    for part in parts:
        call = part.get("functionCall")
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            ids.add(call["id"])
    return ids


def result_part(result: ToolResult, native_ids: set[str]) -> Part:
    """A tool result as a functionResponse part (`output`, or `error` for failures)."""
    key = "error" if result.is_error else "output"
    response: dict[str, JsonValue] = {"name": result.name, "response": {key: result.content}}
    if result.call_id in native_ids:
        response = {"id": result.call_id, **response}
    return {"functionResponse": response}


class GeminiRenderer:
    """Renders transcripts to `generate_content` kwargs, memoising per message."""

    def __init__(self, model: str, *, params: dict[str, JsonValue] | None = None) -> None:
        self.model = model
        self.params = dict(params or {})
        self._tools = ToolsMemo(wire_tools)
        self._memo = AppendMemo()
        self._canon = Canonicalizer(GEMINI_SDK)
        self._reset()

    def _reset(self) -> None:
        self._system: list[str] = []
        self._instruction: dict[str, JsonValue] | None = None
        self._groups: list[Content] = []
        self._native_ids: set[str] = set()

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        self._sync(transcript)
        config: dict[str, Any] = dict(self.params)
        if tools:
            config["tools"] = self._tools.get(tools)
        if self._instruction is not None:
            config["system_instruction"] = self._instruction
        payload = {"model": self.model, "contents": list(self._groups), "config": config}
        return Rendered(payload, self._canon.stream, transcript.assistant_turns())

    def _sync(self, transcript: Transcript) -> None:
        """Bring the memo up to date; anything but a pure append starts over."""
        start, new = self._memo.sync(transcript)
        if not start:
            self._reset()
        for message in new:
            self._add(message)

    def _add(self, message: Message) -> None:
        if isinstance(message, SystemText) and not self._groups:
            self._system.append(message.text)
            # One object while the system text holds, so its serialisation is reused.
            self._instruction = {"parts": [{"text": "\n\n".join(self._system)}]}
        elif isinstance(message, AssistantTurn):
            parts = model_parts(message)
            self._native_ids |= native_call_ids(parts)
            self._groups.append({"role": "model", "parts": parts})
        elif isinstance(message, ToolResult):
            self._user_part(result_part(message, self._native_ids))
        elif isinstance(message, Notice | Summary | SystemText):
            # No system role mid-conversation: rendered in place, never hoisted.
            self._user_part({"text": inline_text(message)})
        else:
            self._user_part({"text": message.text})

    def _user_part(self, part: Part) -> None:
        """Add a user part, joining the open user turn rather than starting a second one."""
        if self._groups and self._groups[-1]["role"] == "user":
            last = self._groups[-1]
            # A new dict, so payloads of earlier renders keep the turn they were sent with.
            self._groups[-1] = {"role": "user", "parts": [*last["parts"], part]}
        else:
            self._groups.append({"role": "user", "parts": [part]})


def parse_usage(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    """Normalise `usage_metadata`.

    `prompt_token_count` includes the cached tokens, so uncached input is prompt - cached
    (never below zero); tool-use prompt tokens are input too. Thinking tokens are billed as
    output, so `output_tokens` = candidates + thoughts, and `reasoning_tokens` = thoughts.
    Implicit caching bills no writes.
    """
    if meta is None:
        return Usage()
    uncached, cached, _ = prompt_split(meta.prompt_token_count, meta.cached_content_token_count, 0)
    thoughts = count(meta.thoughts_token_count)
    return Usage(
        input_tokens=uncached + count(meta.tool_use_prompt_token_count),
        cache_read_tokens=cached,
        output_tokens=count(meta.candidates_token_count) + thoughts,
        reasoning_tokens=thoughts,
    )


def parse_turn(response: types.GenerateContentResponse, turn_index: int) -> AssistantTurn:
    """The first candidate as an assistant turn; its raw parts go to provider_details."""
    if not response.candidates:
        feedback = response.prompt_feedback
        reason = feedback.block_reason if feedback is not None else None
        raise ProviderError(
            f"Gemini returned no candidate (block reason: {reason or 'none given'}); "
            "rephrase the task or check the model's safety settings"
        )
    content = response.candidates[0].content
    parts = list(content.parts or []) if content is not None else []
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        if part.function_call is not None:
            call = part.function_call
            args = dumps(call.args or {})
            call_id = call.id or react_text.call_id(turn_index, len(calls))
            calls.append(ToolCall(call_id, call.name or "", args))
        elif part.text is not None:
            (reasoning if part.thought else text).append(part.text)
    raw = [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in parts]
    return AssistantTurn(
        text="".join(text),
        reasoning="".join(reasoning),
        tool_calls=tuple(calls),
        provider_details={DETAILS_KEY: {"parts": raw}},
    )


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
        client: genai.Client | None = None,
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
        self._client = client or genai.Client(
            api_key=find_key(api_key, *API_KEY_VARIABLES),
            http_options=types.HttpOptions(base_url=base_url) if base_url else None,
        )
        # The SDK keeps the key on its API client (there is no public accessor).
        secrets = client_secrets(self._client._api_client.api_key, base_url)
        key = key_names(*API_KEY_VARIABLES)
        self._failures = Failures(self.name, model, key, GEMINI_ERRORS, secrets)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """One generate_content call; Gemini has no routing key, so `session_id` is unused."""
        payload = rendered.payload
        config = types.GenerateContentConfig(
            **payload["config"],
            # Our loop runs the tools: the SDK must never call functions on its own.
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            http_options=self._http_options,
        )
        with self._failures.mapped(tries=attempts(self.attempts)):
            try:
                response = await with_retries(
                    lambda: self._client.aio.models.generate_content(
                        model=payload["model"], contents=payload["contents"], config=config
                    ),
                    attempts=self.attempts,
                    delay=self.retry_delay,
                )
            except GaveUp as exc:
                tries = attempts(exc.attempts)
                self._failures.raise_for(exc.error, tries=tries, asked=exc.asked)
            except pydantic.ValidationError as exc:  # JSON, but not a GenerateContentResponse
                where = ".".join(str(p) for p in exc.errors()[0]["loc"]) if exc.errors() else "?"
                raise ProviderError(
                    f"{self.name}: malformed reply: {where} does not have the documented shape "
                    f"({exc.error_count()} problem(s)); try again or check the model name"
                ) from exc
            turn = parse_turn(response, rendered.turn_index)
            return ModelResponse(turn, parse_usage(response.usage_metadata))
