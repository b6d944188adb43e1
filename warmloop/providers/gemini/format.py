"""The Gemini wire format, as the google-genai SDK's `generate_content` takes it: tools and
messages to the wire, the reply and its usage back.

Leading system text becomes the `system_instruction`; the tools are one
`function_declarations` tool, the same bytes for a whole session. Each model turn is echoed
from the raw parts Gemini returned (thought signatures included); tool results of one step,
notices and follow-up user text merge into one user turn, so roles alternate and only the
newest turn ever grows. Rendering is pure and memoised per message. Caching is implicit:
Gemini reports hits in `usage_metadata.cached_content_token_count`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from google.genai import types

from warmloop.errors import ProviderError
from warmloop.facts.usage import Usage, count, prompt_split
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
from warmloop.providers.base import ModelResponse
from warmloop.providers.gemini.record import SDK_LAYOUT
from warmloop.providers.render import Growing, Renderer, Wire
from warmloop.tools.schema import ToolSpec
from warmloop.tools.tool import parse_arguments
from warmloop.wire.stream import dumps

DETAILS_KEY = "gemini"
"""`AssistantTurn.provider_details[DETAILS_KEY]["parts"]` holds the model turn's raw parts."""
EMPTY_TURN = "(empty response)"
"""Stands in for a model turn without parts: Gemini rejects a content with no parts."""
Part = dict[str, JsonValue]
Content = dict[str, JsonValue]


@dataclass(frozen=True)
class GeminiWire(Wire):
    """The Gemini wire so far: with the system texts joined into `system`, and the call ids
    Gemini itself put on function calls (a result echoes its id only for those)."""

    system_texts: tuple[str, ...] = ()
    native_ids: frozenset[str] = frozenset()


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


def result_part(result: ToolResult, native_ids: frozenset[str]) -> Part:
    """A tool result as a functionResponse part (`output`, or `error` for failures)."""
    key = "error" if result.is_error else "output"
    response: dict[str, JsonValue] = {"name": result.name, "response": {key: result.content}}
    if result.call_id in native_ids:
        response = {"id": result.call_id, **response}
    return {"functionResponse": response}


def wire_messages(wire: GeminiWire, messages: Iterable[Message]) -> GeminiWire:
    """`wire` with `messages` added: system text before the first content joins the
    `system_instruction`, model turns are their parts, and every user-side piece joins the
    open user turn rather than starting a second one."""
    texts, groups, native = wire.system_texts, Growing(wire.items), wire.native_ids
    for message in messages:
        if isinstance(message, SystemText) and not groups:
            texts = (*texts, message.text)
        elif isinstance(message, AssistantTurn):
            parts = model_parts(message)
            native |= native_call_ids(parts)
            groups.append({"role": "model", "parts": parts})
        elif isinstance(message, ToolResult):
            _user_part(groups, result_part(message, native))
        elif isinstance(message, Notice | Summary | SystemText):
            # No system role mid-conversation: rendered in place, never hoisted.
            _user_part(groups, {"text": inline_text(message)})
        else:
            _user_part(groups, {"text": message.text})
    # One object while the system text holds, so its serialisation is reused.
    system = wire.system
    if texts != wire.system_texts:
        system = {"parts": [{"text": "\n\n".join(texts)}]}
    return GeminiWire(system, groups.items(), texts, native)


def _user_part(groups: Growing[Content], part: Part) -> None:
    """Add a user part, joining the open user turn (as a new dict, so payloads of earlier
    renders keep the turn they were sent with) rather than starting a second one."""
    if groups and groups.last["role"] == "user":
        groups.last = {"role": "user", "parts": [*groups.last["parts"], part]}
    else:
        groups.append({"role": "user", "parts": [part]})


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
    return Usage.of_parts(
        uncached + count(meta.tool_use_prompt_token_count),
        cached,
        0,
        count(meta.candidates_token_count) + thoughts,
        reasoning_tokens=thoughts,
    )


def parse_reply(
    response: types.GenerateContentResponse, turn_index: int, *, name: str = "gemini"
) -> ModelResponse:
    """The first candidate as an assistant turn (its raw parts go to provider_details), and
    the reply's usage; a reply without a candidate is a ProviderError."""
    if not response.candidates:
        feedback = response.prompt_feedback
        reason = feedback.block_reason if feedback is not None else None
        raise ProviderError(
            f"{name}: the reply has no candidate (block reason: {reason or 'none given'}); "
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
    turn = AssistantTurn(
        text="".join(text),
        reasoning="".join(reasoning),
        tool_calls=tuple(calls),
        provider_details={DETAILS_KEY: {"parts": raw}},
    )
    ended = response.candidates[0].finish_reason
    why = ended.value if isinstance(ended, Enum) else ended  # as the API sends it
    return ModelResponse(
        turn,
        parse_usage(response.usage_metadata),
        response_id=response.response_id or "",
        finish_reasons=(why,) if isinstance(why, str) else (),
    )


class GeminiRenderer(Renderer[GeminiWire]):
    """Renders transcripts to `generate_content` kwargs, memoising per message."""

    def __init__(self, model: str, *, params: dict[str, JsonValue] | None = None) -> None:
        self.model = model
        self.params = dict(params or {})
        head: dict[str, Any] = {"model": model, "config": self.params}
        super().__init__(head, SDK_LAYOUT, GeminiWire(), wire_tools, wire_messages)
