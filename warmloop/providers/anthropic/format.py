"""The Anthropic Messages wire format: tools and messages to the wire, the reply and its
usage back.

Leading system texts become `system` blocks; everything after is `messages` with strict
user/assistant alternation. Tool results, notices and follow-up texts appended after one
assistant turn are merged, in order, into one user turn: merging only joins pieces appended
since the last assistant turn, so every earlier wire turn stays byte-identical (I1).
Assistant turns that came from Anthropic are echoed from their raw content blocks (thinking
signatures, redacted thinking and tool_use inputs exactly as received), which `parse_reply`
keeps in the turn's provider details.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from anthropic.types import Message as AnthropicMessage

from warmloop.errors import ProviderError
from warmloop.facts.usage import Usage, count
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
from warmloop.providers.anthropic.cache import place_breakpoints
from warmloop.providers.anthropic.record import LAYOUT
from warmloop.providers.base import ModelResponse
from warmloop.providers.failures import not_json
from warmloop.providers.render import Growing, Renderer, Wire
from warmloop.tools.schema import ToolSpec

DETAILS_KEY = "anthropic"
"""`AssistantTurn.provider_details[DETAILS_KEY]["content"]` holds the raw response blocks."""
EMPTY_TURN = "(no content)"
"""Stands in for an assistant turn with no blocks: the API rejects empty assistant content."""

Block = dict[str, JsonValue]
WireMessage = dict[str, Any]


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


TOOL_SEARCH: Block = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
"""Anthropic's server-side tool search, sent first whenever a tool is deferred
(Tool use > Tool search tool: `defer_loading: true` tools stay out of the context until a
search returns a `tool_reference` to them)."""


def wire_tools(tools: Sequence[ToolSpec]) -> list[Block]:
    """The tools as Messages API tool definitions (server-side tool search first when any
    is deferred)."""
    blocks: list[Block] = [TOOL_SEARCH] if any(t.defer_loading for t in tools) else []
    for t in tools:
        block: Block = {"name": t.name, "description": t.description, "input_schema": t.parameters}
        if t.defer_loading:
            block["defer_loading"] = True
        blocks.append(block)
    return blocks


def tool_input(arguments: str) -> dict[str, JsonValue]:
    """`input` for a tool_use rendered from a turn another provider produced.

    The API requires an object; a raw string that is not one is kept, visibly, under
    `raw_arguments` so the model sees what it sent (its tool result says what was wrong).
    """
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        value = None
    return value if isinstance(value, dict) else {"raw_arguments": arguments}


def assistant_blocks(turn: AssistantTurn) -> list[Block]:
    """An assistant turn's content: the raw response blocks when Anthropic produced it."""
    details = turn.provider_details.get(DETAILS_KEY)
    if isinstance(details, Mapping) and isinstance(details.get("content"), list):
        # Deep copy: the payload must never alias (and let an SDK mutate) transcript data.
        blocks: list[Block] = copy.deepcopy(details["content"])
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        if len(uses) == len(turn.tool_calls):
            # The turn's ids, matched in order: a repeated id was renamed, and the
            # tool_result blocks carry the new one.
            for block, call in zip(uses, turn.tool_calls, strict=True):
                block["id"] = call.id
    else:
        # A turn from another provider: its reasoning has no Anthropic signature, and an
        # unsigned thinking block is rejected, so only text and tool calls carry over.
        blocks = [text_block(turn.text)] if turn.text else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(c.arguments)}
            for c in turn.tool_calls
        ]
    return blocks or [text_block(EMPTY_TURN)]


def wire_piece(message: Message) -> tuple[str, list[Block]]:
    """One transcript message (after the leading system texts) as (role, content blocks)."""
    if isinstance(message, AssistantTurn):
        return "assistant", assistant_blocks(message)
    if isinstance(message, ToolResult):
        block: Block = {
            "type": "tool_result",
            "tool_use_id": message.call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    if isinstance(message, UserText):
        return "user", [text_block(message.text)]
    if isinstance(message, Notice | SystemText | Summary):
        # Rendered in place, never hoisted into `system` (that would move the whole prefix).
        return "user", [text_block(inline_text(message))]
    raise TypeError(f"unknown message kind: {message!r}")


def wire_messages(wire: Wire, messages: Iterable[Message]) -> Wire:
    """`wire` with `messages` added: system texts before the first message go to `system`,
    the rest to `messages`, pieces of one role after another joining its turn (as new
    containers: payloads already handed out keep what they were sent)."""
    system: list[Block] | None = wire.system
    items: Growing[WireMessage] = Growing(wire.items)
    for message in messages:
        if isinstance(message, SystemText) and not items:
            system = [*(system or ()), text_block(message.text)]
            continue
        role, blocks = wire_piece(message)
        if items and items.last["role"] == role:
            items.last = {"role": role, "content": [*items.last["content"], *blocks]}
        else:
            items.append({"role": role, "content": blocks})
    return Wire(system, items.items())


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
            compaction += Usage.of_parts(
                count(_get(item, "input_tokens")),
                count(_get(item, "cache_read_input_tokens")),
                count(_get(item, "cache_creation_input_tokens")),
                count(_get(item, "output_tokens")),
            )
    return Usage.of_parts(
        count(_get(usage, "input_tokens")),  # the uncached part: Anthropic's input_tokens
        count(_get(usage, "cache_read_input_tokens")),
        written,
        count(_get(usage, "output_tokens")),
        cache_write_1h_tokens=min(count(split_1h), written),
        reasoning_tokens=count(_get(_get(usage, "output_tokens_details"), "thinking_tokens")),
        compaction_input_tokens=compaction.input_tokens,
        compaction_cache_read_tokens=compaction.cache_read_tokens,
        compaction_cache_write_tokens=compaction.cache_write_tokens,
        compaction_output_tokens=compaction.output_tokens,
    )


def parse_reply(
    message: object, turn_index: int, *, name: str = "anthropic", cache_ttl: str = "5m"
) -> ModelResponse:
    """The assistant turn (raw blocks kept for the echo) and usage of one reply; a reply
    that is not a Message, or one without `content` or `usage`, is a ProviderError.
    (Anthropic names every tool call, so `turn_index` is not needed for ids.)"""
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
    usage = parse_usage(message.usage, cache_ttl)
    stop = message.stop_reason
    return ModelResponse(
        turn,
        usage,
        response_id=message.id if isinstance(message.id, str) else "",
        finish_reasons=(stop,) if isinstance(stop, str) else (),
    )


class AnthropicRenderer(Renderer[Wire]):
    """Renders transcripts to `messages.create` keyword arguments, memoising each wire
    message, with the cache breakpoints placed (the stream leaves them out)."""

    def __init__(self, head: Mapping[str, JsonValue], control: Mapping[str, JsonValue]) -> None:
        super().__init__(head, LAYOUT, Wire(), wire_tools, wire_messages)
        self.control = dict(control)

    def payload(self, wire: Wire, tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The request with its breakpoints placed."""
        return place_breakpoints(super().payload(wire, tools), self.control)
