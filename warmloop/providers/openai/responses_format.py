"""The OpenAI Responses wire format, used statelessly (`store=False`: every request carries
it all): tools and messages to the wire, the reply and its usage back.

The first system text becomes `instructions` (or, on models that take explicit cache
breakpoints, a developer message carrying one); every other message becomes `input` items
in place: notices as `<system-reminder>` developer text (never hoisted into
`instructions`), assistant turns as the raw output items the API returned (reasoning items
with their `encrypted_content`, messages, function calls) echoed verbatim, tool results as
`function_call_output` items. Rendering is pure and memoised per message.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

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
    UserText,
)
from warmloop.protocols.inline import inline_text
from warmloop.providers.base import ModelResponse
from warmloop.providers.openai.cache import marked_text
from warmloop.providers.openai.chat_format import ERROR_PREFIX
from warmloop.providers.openai.record import RESPONSES
from warmloop.providers.render import Growing, Renderer, Wire
from warmloop.tools.schema import ToolSpec

DETAILS_KEY = "openai_responses"
"""`AssistantTurn.provider_details[DETAILS_KEY]` holds the raw output items, echoed verbatim."""
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


def wire_messages(wire: Wire, messages: Iterable[Message], *, breakpoint: bool = False) -> Wire:
    """`wire` with `messages` added as `input` items, in place; the opening system text is
    the session's `instructions` (it never changes, so it sits in the cached prefix), or
    with `breakpoint` a developer message whose end is where every session's cache starts
    (`instructions` is a string, which cannot carry a breakpoint: GPT-5.6 and later)."""
    instructions: str | None = wire.system
    items: Growing[Item] = Growing(wire.items)
    for message in messages:
        if isinstance(message, SystemText) and instructions is None and not items:
            if breakpoint:
                content = marked_text(message.text, "input_text")
                items.append({"type": "message", "role": "developer", "content": content})
            else:
                instructions = message.text
            continue
        items.extend(input_items(message))
    return Wire(instructions, items.items())


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
    return Usage.of_parts(
        uncached,
        read,
        written,
        data.get("output_tokens"),
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


def parse_turn(raw_items: list[Item], name: str = "openai") -> AssistantTurn:
    """The assistant turn of a response's `output` items, which are kept to echo verbatim.
    An item that cannot be read is a ProviderError naming it."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    for index, item in enumerate(raw_items):
        if not isinstance(item, dict):
            raise ProviderError(f"{name}: malformed reply: output item {index} is not an object")
        kind = item.get("type")
        if kind == "message":
            texts += _texts(item.get("content"), "text", "refusal")
        elif kind == "reasoning":
            reasoning += _texts(item.get("summary") or item.get("content"), "text")
        elif kind == "function_call":
            call_id, tool = item.get("call_id"), item.get("name")
            if not isinstance(call_id, str) or not isinstance(tool, str) or not tool:
                raise ProviderError(
                    f"{name}: malformed reply: function call {index} has no call_id or name"
                )
            arguments = item.get("arguments")
            calls.append(ToolCall(call_id, tool, arguments if isinstance(arguments, str) else "{}"))
    return AssistantTurn(
        text="\n\n".join(t for t in texts if t),
        reasoning="\n\n".join(r for r in reasoning if r),
        tool_calls=tuple(calls),
        provider_details={DETAILS_KEY: raw_items},
    )


def parse_reply(body: dict[str, Any], turn_index: int, *, name: str = "openai") -> ModelResponse:
    """A response body as a ModelResponse; a failed or malformed one as a ProviderError.
    (Every function call has its `call_id`, so `turn_index` is not needed for ids.)"""
    error = body.get("error")
    if error is not None or body.get("status") == "failed":
        detail = error.get("message") if isinstance(error, dict) else None
        raise ProviderError(
            f"{name}: the API reported the response as failed ({detail or 'no detail given'}); "
            "try again, or check the request options"
        )
    output = body.get("output")
    if not isinstance(output, list):
        raise ProviderError(
            f"{name}: malformed reply: `output` is "
            f"{'missing' if output is None else 'not a list'}; try again"
        )
    found, status = body.get("id"), body.get("status")
    incomplete = body.get("incomplete_details")
    reason = incomplete.get("reason") if isinstance(incomplete, dict) else status
    return ModelResponse(
        parse_turn(output, name),
        parse_usage(body.get("usage")),
        response_id=found if isinstance(found, str) else "",
        finish_reasons=(reason,) if isinstance(reason, str) else (),
    )


class ResponsesRenderer(Renderer[Wire]):
    """Renders transcripts to `responses.create` kwargs, memoising each message's items."""

    def __init__(
        self, model: str, params: dict[str, JsonValue], *, breakpoint: bool = False
    ) -> None:
        self.breakpoint = breakpoint
        """Open with a developer message that carries an explicit cache breakpoint instead
        of `instructions` (a string, which cannot carry one): GPT-5.6 and later."""
        messages = partial(wire_messages, breakpoint=breakpoint)
        super().__init__({"model": model, **params}, RESPONSES, Wire(), wire_tools, messages)
