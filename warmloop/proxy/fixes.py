"""What `warmloop proxy` adds to a request so its cache is reused: cache markers, a routing
key, a session header; never anything the model reads.

Each fix is switchable (`Fixes`) and each rule is read where warmloop keeps it:
- cache breakpoints, on a wire format whose cache reads and writes only at the request's
  own markers (`WireFormat.explicit_breakpoints`: Anthropic Messages), placed by warmloop's
  own placement (`providers.anthropic_cache.place_breakpoints`: at most 4, each read found
  within the 20-block lookback), on a request that carries none; one that carries any is
  the client's and is left alone. A string `system` or a string message content that gets
  a marker becomes the one text block it stands for (the API's documented equivalent);
- OpenAI's explicit breakpoint (`providers.openai_cache`, "Prompt cache breakpoints") on
  the opening system or developer message of a Chat Completions `messages` or a Responses
  `input` to a model whose profile takes breakpoints (GPT-5.6 and later), on the
  provider's own host, where the client placed none: every session of an agent then reads
  the shared opening. A Responses request whose opening is its `instructions` (a string,
  which no breakpoint can mark) and whose `input` opens with the user's turn goes as sent:
  moving the instructions into a message would change what the model reads;
- the routing key the provider record names (`ProviderRecord.routing`: `prompt_cache_key`
  in the body for OpenAI, a header for xAI), where the client sent none, on the provider's
  own hosts only (`ProviderRecord.hosts`: another host speaking the same wire may refuse a
  field it never documented);
- a session header for a self-hosted router (`--session-header`, checked as
  `providers.routing.header_name` checks a model's), where the client sent none.
The key and the header carry the conversation's id (`proxy.conversations`), never a
credential.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from warmloop.audit.formats import own_profile
from warmloop.providers.anthropic_cache import (
    breakpoint_positions,
    cache_control,
    message_breakpoints,
    place_breakpoints,
)
from warmloop.providers.openai_cache import BREAKPOINT, marked_text, takes_breakpoints
from warmloop.providers.records import ProviderRecord, WireFormat
from warmloop.providers.registry import providers
from warmloop.providers.routing import header_name, routing_key


@dataclass(frozen=True)
class Fixes:
    """The switches: `breakpoints` (cache markers where the client placed none),
    `cache_key` (the provider's routing key), `session_header` (a header name, or None)."""

    breakpoints: bool = True
    cache_key: bool = True
    session_header: str | None = None

    def __post_init__(self) -> None:
        header_name(self.session_header)  # a bad name is refused when the proxy starts

    @property
    def any(self) -> bool:
        """Whether any fix is on (off: every request goes as sent, as `warmloop record`)."""
        return self.breakpoints or self.cache_key or self.session_header is not None


BREAKPOINT_FIELD = "prompt_cache_breakpoint"
OPENING_ROLES = frozenset({"system", "developer"})
TEXT_PART = {"messages": "text", "input": "input_text"}
"""The text part a string content stands for, by the key of the conversation it is in
(Chat Completions' `messages`, Responses' `input`)."""
BREAKPOINTS = "cache breakpoints"
"""What `Fixed.added` names when the proxy placed the breakpoints."""
OFF = Fixes(breakpoints=False, cache_key=False)
"""Every fix off: `warmloop record`."""


@dataclass(frozen=True)
class Fixed:
    """A request as it goes upstream: `body` (None: the client's bytes) and `headers`, and
    what was added, in words, for the log line and the status page."""

    body: bytes | None
    headers: list[tuple[str, str]]
    added: tuple[str, ...]


def home_provider(upstream: str, wire: WireFormat) -> ProviderRecord | None:
    """The provider whose own host the upstream is, speaking `wire` (None: any other host)."""
    host = (urlsplit(upstream).hostname or "").lower()
    return next(
        (p for p in providers() if host in p.hosts and p.wire_format == wire.name),
        None,
    )


def apply(
    fixes: Fixes,
    wire: WireFormat,
    provider: ProviderRecord | None,
    body: dict[str, Any],
    headers: list[tuple[str, str]],
    conversation: str,
) -> Fixed:
    """The request with the fixes `fixes` turns on added; `body` is the client's parsed body
    (not changed), `conversation` the id its routing key and header carry."""
    key = routing_key(conversation)
    added: list[str] = []
    out: dict[str, Any] = body
    if fixes.breakpoints and wire.explicit_breakpoints:
        marked = with_breakpoints(body)
        if marked is not None:
            out = marked
            added.append(BREAKPOINTS)
    elif fixes.breakpoints and provider is not None and _takes_openai_breakpoints(wire, body):
        marked = with_opening_breakpoint(body, wire.layout.conversation[-1])
        if marked is not None:
            out = marked
            added.append(BREAKPOINTS)
    routing = provider.routing if provider is not None else None
    if fixes.cache_key and routing is not None and routing.field and routing.field not in out:
        out = {**out, routing.field: key}
        added.append(routing.field)
    names = {name.lower() for name, _ in headers}
    extra = [
        name
        for name in (
            routing.header if fixes.cache_key and routing is not None else None,
            fixes.session_header,
        )
        if name is not None and name.lower() not in names
    ]
    for name in dict.fromkeys(extra):
        headers = [*headers, (name, key)]
        added.append(name)
    return Fixed(_encoded(out) if out is not body else None, headers, tuple(added))


def with_breakpoints(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A Messages body with warmloop's breakpoints placed, or None: it carries markers of
    its own (the client placed them), or it is not shaped as the API takes it (the
    upstream answers that with its own error)."""
    if not _messages_shaped(body) or "cache_control" in body or breakpoint_positions(body):
        return None
    out = dict(body)
    system = body.get("system")
    if isinstance(system, str):
        if system:
            out["system"] = [{"type": "text", "text": system}]
        else:
            del out["system"]
    messages = list(body["messages"])
    for index in message_breakpoints(messages):
        content = messages[index]["content"]
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}] if content else []
            messages[index] = {**messages[index], "content": blocks}
    out["messages"] = messages
    placed = place_breakpoints(out, cache_control("5m"))
    # what was only rewritten as blocks and got no marker goes as the client sent it
    if isinstance(system, str) and not system:
        placed["system"] = system
    for index in message_breakpoints(messages):
        if placed["messages"][index]["content"] == []:
            placed["messages"][index] = body["messages"][index]
    return placed


def _takes_openai_breakpoints(wire: WireFormat, body: Mapping[str, Any]) -> bool:
    model = body.get("model")
    return isinstance(model, str) and takes_breakpoints(own_profile(wire, model))


def with_opening_breakpoint(body: Mapping[str, Any], items: str) -> dict[str, Any] | None:
    """An OpenAI body with the explicit breakpoint on its opening system (or developer)
    message, where every session of an agent can read it, or None: the body carries a
    breakpoint of its own, opens with no such message, or is shaped otherwise. `items` is
    the key of its conversation: `messages` (Chat Completions) or `input` (Responses); a
    string content becomes the one text part it stands for (`text` or `input_text`)."""
    messages = body.get(items)
    if not isinstance(messages, list) or not messages or _has_breakpoint(messages):
        return None
    first = messages[0]
    if not isinstance(first, Mapping) or first.get("role") not in OPENING_ROLES:
        return None
    content = first.get("content")
    if isinstance(content, str) and content:
        marked: Any = marked_text(content, TEXT_PART.get(items, "text"))
    elif _blocks(content) and content:
        marked = [*content[:-1], {**content[-1], BREAKPOINT_FIELD: dict(BREAKPOINT)}]
    else:
        return None
    return {**body, items: [{**first, "content": marked}, *messages[1:]]}


def _has_breakpoint(messages: list[Any]) -> bool:
    return any(
        isinstance(block, Mapping) and BREAKPOINT_FIELD in block
        for message in messages
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def _messages_shaped(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return False
    for message in messages:
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            return False
        content = message.get("content")
        if not isinstance(content, str) and not _blocks(content):
            return False
    tools, system = body.get("tools"), body.get("system")
    return (tools is None or _blocks(tools)) and (
        system is None or isinstance(system, str) or _blocks(system)
    )


def _blocks(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(block, Mapping) for block in value)


def _encoded(body: Mapping[str, Any]) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate the client escaped: escape it again
        return json.dumps(body, separators=(",", ":")).encode()
