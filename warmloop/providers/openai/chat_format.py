"""The Chat Completions wire format (OpenAI and OpenAI-compatible servers): tools and
messages to the wire, the reply and its usage back.

Rendering is pure and memoised per message (`render.Renderer`): the opening system text is
the system message, later system text, notices and summaries are user text in place, and
each assistant turn echoes the fields its host sent (reasoning, raw tool calls).

Reading is tolerant, because OpenAI-compatible hosts differ from OpenAI's reference in ways
a strict reader trips on: Mistral leaves `type` off tool calls, OpenRouter leaves
`arguments` off a call whose parameters are all optional, reasoning comes as
`reasoning_content` (DeepSeek), `reasoning` (Groq, OpenRouter, Cerebras, Ollama) or
`reasoning_details` (OpenRouter), servers repeat call ids, gateways report overlapping cache
counters. Each is read as the host sent it and echoed as the host sent it (a repeated call
id is renamed once, for every wire format, by `Transcript.unique_calls`); what cannot be
read at all is a `ProviderError` that names the field, never an AttributeError out of the
loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
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
from warmloop.protocols import react_text
from warmloop.protocols.inline import inline_text
from warmloop.providers.base import ModelResponse, Rendered, text_protocol_reply
from warmloop.providers.openai.cache import marked_text
from warmloop.providers.openai.record import CHAT
from warmloop.providers.render import Growing, Renderer, Wire
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

ERROR_PREFIX = "ERROR: "
DETAILS_KEY = "chat"
"""`AssistantTurn.provider_details[DETAILS_KEY]` holds extra assistant fields to echo back
(e.g. DeepSeek's `reasoning_content`)."""
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
"""Assistant fields that carry reasoning a host wants back: DeepSeek's `reasoning_content`
(required on tool-call turns), `reasoning` (Groq, OpenRouter, Cerebras, Ollama) and
OpenRouter's `reasoning_details` ("Preserving reasoning blocks": send them back unchanged to
keep reasoning across tool calls)."""
EMPTY_ARGUMENTS = "{}"


def wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, JsonValue]]:
    """The tools as Chat Completions function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def echoed_calls(raw: list[JsonValue], calls: Sequence[ToolCall]) -> list[JsonValue]:
    """The host's raw tool calls with the turn's ids, so a renamed call and its result pair
    on the wire; unchanged (same bytes) where no id was renamed."""
    if len(raw) != len(calls):
        return raw  # not this turn's calls (a hand-made transcript): nothing to match
    return [
        {**item, "id": call.id} if isinstance(item, dict) and item.get("id") != call.id else item
        for item, call in zip(raw, calls, strict=True)
    ]


def wire_message(
    message: Message, *, opening: bool = False, breakpoint: bool = False
) -> dict[str, JsonValue]:
    """One transcript message as one Chat Completions message (the opening system text
    as the system message, a text block with an explicit cache breakpoint if `breakpoint`;
    later system text, notices and summaries as user text)."""
    if isinstance(message, SystemText) and opening:
        content = marked_text(message.text, "text") if breakpoint else message.text
        return {"role": "system", "content": content}
    if isinstance(message, UserText):
        return {"role": "user", "content": message.text}
    if isinstance(message, AssistantTurn):
        out: dict[str, JsonValue] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ]
        details = message.provider_details.get(DETAILS_KEY, {})
        out.update(details)
        if isinstance(details, dict) and isinstance(details.get("tool_calls"), list):
            out["tool_calls"] = echoed_calls(details["tool_calls"], message.tool_calls)
        return out
    if isinstance(message, ToolResult):
        content = ERROR_PREFIX + message.content if message.is_error else message.content
        return {"role": "tool", "tool_call_id": message.call_id, "content": content}
    if isinstance(message, Notice | Summary | SystemText):
        return {"role": "user", "content": inline_text(message)}
    raise TypeError(f"unknown message kind: {message!r}")


def wire_messages(wire: Wire, messages: Iterable[Message], *, breakpoint: bool = False) -> Wire:
    """`wire` with `messages` added, one wire message each (the first one, when it is system
    text, as the system message: with an explicit cache breakpoint if `breakpoint`)."""
    items = Growing(wire.items)
    for message in messages:
        items.append(wire_message(message, opening=not items, breakpoint=breakpoint))
    return Wire(items=items.items())


def _dict(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProviderError(f"malformed reply: {what} is {_shape(value)}, not a JSON object")
    return value


def _shape(value: object) -> str:
    if value is None:
        return "missing or null"
    return f"a JSON {type(value).__name__}" if not isinstance(value, str) else "a string"


def parse_usage(body: Mapping[str, Any]) -> Usage:
    """Normalise a completion's usage (from the whole body: llama.cpp reports `timings` beside
    `usage`): `input_tokens` every prompt token, `cache_read_tokens` those cached.

    Reads, in order: DeepSeek's `prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`,
    OpenAI's `prompt_tokens_details.cached_tokens` (and `cache_write_tokens`; the two never
    add up to more than the prompt), and the llama.cpp server's `timings.cache_n`/`prompt_n`.
    """
    timings = body.get("timings")
    timings = timings if isinstance(timings, dict) else {}
    usage = body.get("usage")
    if not isinstance(usage, dict):  # some servers omit usage but still report timings
        return Usage.of_parts(  # prompt_n: the tokens it evaluated, after cache_n reused
            timings.get("prompt_n"), timings.get("cache_n"), 0, timings.get("predicted_n")
        )
    output = count(usage.get("completion_tokens"))
    reasoning = _nested(usage, "completion_tokens_details", "reasoning_tokens")
    if "prompt_cache_hit_tokens" in usage and "prompt_cache_miss_tokens" in usage:
        return Usage.of_parts(
            usage["prompt_cache_miss_tokens"],
            usage["prompt_cache_hit_tokens"],
            0,
            output,
            reasoning_tokens=reasoning,
        )
    details = usage.get("prompt_tokens_details")
    if "prompt_cache_hit_tokens" in usage:
        read: object = usage["prompt_cache_hit_tokens"]
    elif isinstance(details, dict) and details.get("cached_tokens") is not None:
        read = details["cached_tokens"]
    else:
        read = timings.get("cache_n")
    written = details.get("cache_write_tokens") if isinstance(details, dict) else None
    uncached, hit, wrote = prompt_split(usage.get("prompt_tokens"), read, written)
    return Usage.of_parts(uncached, hit, wrote, output, reasoning_tokens=reasoning)


def _nested(value: Mapping[str, Any], *keys: str) -> int:
    found: object = value
    for key in keys:
        found = found.get(key) if isinstance(found, dict) else None
    return count(found)


def reasoning_details(message: Mapping[str, Any]) -> dict[str, JsonValue]:
    """Assistant fields the next request must echo back as the host sent them."""
    details: dict[str, JsonValue] = {}
    for key in REASONING_FIELDS:
        if message.get(key) is not None:
            details[key] = message[key]
    if message.get("refusal") is not None:
        details["refusal"] = message["refusal"]
    return details


def _reasoning_text(message: Mapping[str, Any]) -> str:
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            return str(message[key])
    items = message.get("reasoning_details")
    if isinstance(items, list):  # OpenRouter: summaries or text, one item per block
        texts = [
            item.get("summary") or item.get("text") for item in items if isinstance(item, dict)
        ]
        return "\n\n".join(t for t in texts if isinstance(t, str) and t)
    return ""


def tool_calls(
    message: Mapping[str, Any], turn_index: int
) -> tuple[tuple[ToolCall, ...], list[JsonValue] | None]:
    """The message's tool calls, and the raw list to echo when the host's form differs
    from the standard one (no `type`, no or non-string `arguments`, no id)."""
    raw = message.get("tool_calls")
    if raw is None:
        return (), None
    if not isinstance(raw, list):
        raise ProviderError(f"malformed reply: tool_calls is {_shape(raw)}, not a list")
    calls: list[ToolCall] = []
    echo: list[JsonValue] = []
    for index, item in enumerate(raw):
        item = _dict(item, f"tool call {index}")
        kind = item.get("type", "function")
        if kind not in ("function", None):  # Mistral leaves `type` off: a function call
            raise ProviderError(
                f"the model returned a {kind!r} tool call, but only function tools were "
                "offered; this server's tool-calling output is not supported, try "
                "text_protocol=True"
            )
        function = _dict(item.get("function"), f"the function of tool call {index}")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ProviderError(f"malformed reply: tool call {index} has no function name")
        arguments = function.get("arguments")
        if arguments is None:  # OpenRouter, for a tool whose parameters are all optional
            text = EMPTY_ARGUMENTS
        elif isinstance(arguments, str):
            text = arguments
        else:  # an object where a JSON string belongs: kept as its JSON
            text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        given = item.get("id")
        # A server that sends no id still needs one to pair the result (I4: deterministic).
        call_id = given if isinstance(given, str) and given else None
        call_id = call_id or react_text.call_id(turn_index, index)
        # A repeated id stays as sent: the runner renames it (Transcript.unique_calls), and
        # the renderer echoes the turn's ids.
        calls.append(ToolCall(call_id, name, text))
        echo.append({**item, "id": call_id})
    standard = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]
    return tuple(calls), (None if echo == standard else echo)


def first_message(body: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The first choice's message; a ProviderError naming what is missing (or the server's
    own error, which some hosts send with status 200)."""
    error = body.get("error")
    if error is not None and not body.get("choices"):
        detail = error.get("message") if isinstance(error, dict) else error
        raise ProviderError(
            f"{name}: the server answered with an error: {str(detail)[:500] or 'no detail given'}"
            "; check the server's logs, or retry"
        )
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ProviderError(
            f"{name}: the reply has no choices; the server returned an empty completion, "
            "retry the request or check the server's logs"
        )
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ProviderError(f"{name}: malformed reply: the first choice has no message object")
    content = message.get("content")
    blocks = isinstance(content, list) and all(isinstance(b, dict) for b in content)
    if content is not None and not isinstance(content, str) and not blocks:
        raise ProviderError(
            f"{name}: malformed reply: the message content is neither text nor a list of blocks"
        )
    return message


def _chunks_text(value: object, kind: str) -> str:
    """The text of a block list's `kind` blocks (a block's own field may be text or a
    nested list of text chunks, as Mistral's `thinking` is)."""
    parts: list[str] = []
    for block in value if isinstance(value, list) else ():
        if not isinstance(block, dict) or block.get("type") != kind:
            continue
        inner = block.get(kind)
        if isinstance(inner, str):
            parts.append(inner)
        elif isinstance(inner, list):
            parts.extend(
                c["text"] for c in inner if isinstance(c, dict) and isinstance(c.get("text"), str)
            )
    return "".join(parts)


def parse_reply(
    body: Mapping[str, Any],
    turn_index: int,
    *,
    name: str = "chat completions",
    text_protocol: bool = False,
) -> ModelResponse:
    """The reply's first choice as a ModelResponse (format_error set if text didn't parse)."""
    usage = parse_usage(body)
    message = first_message(body, name)
    content = message.get("content")
    details = reasoning_details(message)
    text = content or ""
    thinking = ""
    if isinstance(content, list):  # text and thinking blocks (Mistral): echoed as they came
        details["content"] = content
        text, thinking = _chunks_text(content, "text"), _chunks_text(content, "thinking")
    ended = reply_ending(body)
    if text_protocol:
        echo: dict[str, JsonValue] = {DETAILS_KEY: details} if details else {}
        parsed = text_protocol_reply(text, turn_index, usage, echo)
        return replace(parsed, response_id=ended[0], finish_reasons=ended[1])
    try:
        calls, raw_calls = tool_calls(message, turn_index)
    except ProviderError as exc:
        raise ProviderError(f"{name}: {exc}") from None
    if raw_calls is not None:
        details["tool_calls"] = raw_calls
    turn = AssistantTurn(
        text=text,
        reasoning="\n\n".join(r for r in (thinking, _reasoning_text(message)) if r),
        tool_calls=calls,
        provider_details={DETAILS_KEY: details} if details else {},
    )
    return ModelResponse(turn, usage, response_id=ended[0], finish_reasons=ended[1])


def reply_ending(body: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A completion's id and each choice's `finish_reason` (what telemetry reports)."""
    choices = body.get("choices")
    reasons = tuple(
        choice["finish_reason"]
        for choice in (choices if isinstance(choices, list) else ())
        if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str)
    )
    found = body.get("id")
    return (found if isinstance(found, str) else ""), reasons


class ChatRenderer(Renderer[Wire]):
    """Renders transcripts to Chat Completions payloads, memoising per message; with
    `text_protocol`, as the text protocol's alternating turns (no native tools)."""

    def __init__(
        self,
        model: str,
        *,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        breakpoint: bool = False,
    ) -> None:
        self.model = model
        self.text_protocol = text_protocol
        self.breakpoint = breakpoint
        self.params = dict(params or {})
        head = {"model": model, **self.params}
        super().__init__(
            head, CHAT, Wire(), wire_tools, partial(wire_messages, breakpoint=breakpoint)
        )

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the same transcript and tools give the same payload and stream."""
        if not self.text_protocol:
            return super().render(transcript, tools)
        messages = [
            {"role": role, "content": text}
            for role, text in react_text.turns(transcript.visible_messages(), tools)
        ]
        return self.rendered({**self.head, "messages": messages}, transcript)
