"""What a logged response says about the cache: its usage, its id and the provider's own
cache diagnostics.

Responses come as one JSON body or as server-sent events. Where each wire format puts its
usage (provider docs, "streaming" sections):
- Anthropic Messages: `usage` of the message; streamed, `message_start.message.usage` then
  `message_delta.usage` (cumulative counts); `diagnostics` on the message or on
  `message_start.message` (cache diagnostics, beta `cache-diagnosis-2026-04-07`).
- OpenAI Chat Completions: `usage`; streamed, the last chunk when
  `stream_options.include_usage` is set.
- OpenAI Responses: `usage`; streamed, `response.completed` (or `.incomplete`) events;
  `prompt_cache_diagnostics` beside it (GPT-5.6 and later).
- Gemini: `usageMetadata`; streamed, every chunk, the last one final.

Whether the answer asked for a tool (`ResponseFacts.asked_tool`: the client comes back with
its result) or ended the turn (a person or a script decides whether anything follows):
Anthropic's `stop_reason` `tool_use` (on the message or `message_delta.delta`), Chat's
`finish_reason` `tool_calls`, a Responses output item of a `*_call` type, a Gemini part
with a `functionCall`.

Bodies are read within bounds (`Inflater`): compressed bytes are inflated only up to a limit,
so a gzip bomb never becomes a gigabyte; `READ_CODINGS` are the content codings read (a
proxy asks its upstream for those only: `proxy.forwarding.readable`).

`normalise_usage` turns any of those objects into warmloop's `Usage` (by its format's own
reader when the format is known, else by the format whose record claims its keys);
`logged_verdict` reads a logged request's diagnostics as its format's provider words them
(`WireFormat.read_verdict`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from warmloop.exchange.formats import claimed_by
from warmloop.exchange.log import LoggedRequest, deeper_than
from warmloop.facts.usage import Usage
from warmloop.messages import JsonObject
from warmloop.providers.records import WireFormat
from warmloop.providers.registry import wire_formats
from warmloop.wire.verdict import ProviderVerdict

DIAGNOSTICS_KEYS = ("diagnostics", "prompt_cache_diagnostics")
"""Where Anthropic and OpenAI put their cache diagnostics in a response."""


KEEP_BYTES = 64 * 1024 * 1024
"""Response bytes kept for reading usage (a proxy forwards the body whole regardless)."""
READ_CODINGS = ("gzip", "deflate", "identity")
"""The content codings a response is read in (brotli and zstd need packages warmloop does
not depend on; the proxy asks for these only)."""
TOOL_STOPS = frozenset({"tool_use", "tool_calls", "function_call"})
"""Anthropic's `stop_reason` and Chat's `finish_reason` when the answer asks for a tool."""


class Inflater:
    """A response body decoded as it arrives, at most `limit` bytes of it: past the limit
    (a body too long to hold, or a small compressed one that inflates past it) the rest is
    dropped and `full` is set. A coding it does not read decodes to nothing."""

    def __init__(self, encoding: str, limit: int = KEEP_BYTES) -> None:
        coding = encoding.strip().lower()
        self.limit = limit
        self.readable = coding in ("", *READ_CODINGS)
        # 47: a gzip or zlib header, either
        self._zlib = zlib.decompressobj(47) if coding in ("gzip", "deflate") else None
        self._parts: list[bytes] = []
        self._size = 0
        self.full = False

    def feed(self, chunk: bytes) -> bool:
        """Decode one chunk; False once no more is wanted (full, unreadable or broken)."""
        if self.full or not self.readable:
            return False
        room = self.limit - self._size
        if self._zlib is None:
            part = chunk[:room]
            cut = len(part) < len(chunk)
        else:
            try:
                part = self._zlib.decompress(chunk, room)
            except zlib.error:
                self.readable = False
                return False
            cut = bool(self._zlib.unconsumed_tail)
        self._parts.append(part)
        self._size += len(part)
        self.full = cut or self._size >= self.limit
        return not self.full

    @property
    def body(self) -> bytes:
        """What was decoded (empty for a coding it does not read, or a broken body)."""
        return b"".join(self._parts) if self.readable else b""


def decoded(data: bytes, encoding: str, limit: int = KEEP_BYTES) -> bytes:
    """The kept response bytes as the client reads them, at most `limit` of them: a 2 MB
    gzip body can inflate to 2 GB, and usage is read from what fits (an answer cut there
    reads as one without usage; the body itself was relayed whole)."""
    inflater = Inflater(encoding, limit)
    inflater.feed(data)
    return inflater.body


@dataclass(frozen=True)
class ResponseFacts:
    """The usage object, cache diagnostics and response id found in a response (None when
    absent)."""

    usage: JsonObject | None = None
    diagnostics: JsonObject | None = None
    response_id: str | None = None
    asked_tool: bool | None = None
    """Whether the answer asked for a tool (None: it does not say)."""


def _sse_data(text: str) -> Iterator[object]:
    """The JSON `data:` payloads of an event stream, in order (others are skipped)."""
    for event in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
        if not lines:
            continue
        try:
            yield json.loads("\n".join(lines))
        except (ValueError, RecursionError):
            continue  # "[DONE]", keep-alive comments, an event nested past the parser


def _merge(into: JsonObject | None, update: object) -> JsonObject | None:
    if not isinstance(update, dict):
        return into
    merged = dict(into or {})
    merged.update({k: v for k, v in update.items() if v is not None})
    return merged


def facts_from_object(data: object, facts: ResponseFacts = ResponseFacts()) -> ResponseFacts:
    """Fold one JSON object (a whole response or one streamed event) into `facts`."""
    if not isinstance(data, dict):
        return facts
    usage, diagnostics, found_id = facts.usage, facts.diagnostics, facts.response_id
    kind = data.get("type")
    message = data.get("message") if kind == "message_start" else data
    response = data.get("response")
    # Anthropic's message (or `message_start.message`), OpenAI's response (or an event's)
    for whole in (message, response):
        if not isinstance(whole, dict):
            continue
        for key in DIAGNOSTICS_KEYS:
            if isinstance(whole.get(key), dict):
                diagnostics = whole[key]
        if whole.get("type") == "message" or whole.get("object") == "response":
            found_id = whole["id"] if isinstance(whole.get("id"), str) else found_id
    if kind == "message_start" and isinstance(message, dict):
        usage = _merge(usage, message.get("usage"))
    elif isinstance(response, dict) and isinstance(response.get("usage"), dict):
        usage = dict(response["usage"])  # Responses events carry the whole response
    elif isinstance(data.get("usage"), dict):
        usage = _merge(usage, data["usage"])  # Anthropic message_delta, Chat chunks, bodies
    elif isinstance(data.get("usageMetadata"), dict):
        usage = dict(data["usageMetadata"])  # Gemini: the last chunk's counts are final
    asked = _asked_tool(data, message, response)
    return ResponseFacts(usage, diagnostics, found_id, facts.asked_tool if asked is None else asked)


def _asked_tool(data: dict[str, object], message: object, response: object) -> bool | None:
    """Whether one object says the answer asked for a tool (None: it says nothing)."""
    delta = data.get("delta")
    for whole in (message, delta):
        if isinstance(whole, dict) and isinstance(whole.get("stop_reason"), str):
            return whole["stop_reason"] in TOOL_STOPS  # Anthropic
    choices = data.get("choices")
    if isinstance(choices, list):
        reasons = [c.get("finish_reason") for c in choices if isinstance(c, dict)]
        if any(isinstance(r, str) for r in reasons):
            return any(r in TOOL_STOPS for r in reasons)  # Chat Completions
    output = response.get("output") if isinstance(response, dict) else data.get("output")
    if isinstance(output, list) and output:  # Responses
        kinds = [item.get("type") for item in output if isinstance(item, dict)]
        return any(isinstance(k, str) and k.endswith("_call") for k in kinds)
    candidates = data.get("candidates")
    if isinstance(candidates, list):  # Gemini
        parts = [
            part
            for c in candidates
            if isinstance(c, dict) and isinstance(c.get("content"), dict)
            for part in c["content"].get("parts") or ()
            if isinstance(part, dict)
        ]
        if parts:
            return any("functionCall" in part for part in parts)
    return None


def response_facts(body: bytes, content_type: str = "") -> ResponseFacts:
    """Usage and diagnostics from a response body (JSON, or an event stream); none from a
    body that cannot be read (cut short, not JSON, nested 100,000 levels deep)."""
    text = body.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    facts = ResponseFacts()
    if "event-stream" in content_type or stripped.startswith(("data:", "event:")):
        for data in _sse_data(text):
            facts = facts_from_object(data, facts)
        return _shallow(facts)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser: no usage
        return facts
    # Gemini's non-SSE stream is one JSON array of chunks.
    for item in data if isinstance(data, list) else [data]:
        facts = facts_from_object(item, facts)
    return _shallow(facts)


FACT_DEPTH = 16
"""Levels a usage or diagnostics object may nest (the providers' nest three or four): a
deeper one is damage, and logging it would make the audit skip the request's whole line."""


def _shallow(facts: ResponseFacts) -> ResponseFacts:
    """`facts` without a usage or diagnostics object nested past FACT_DEPTH."""
    usage, diagnostics = (
        None if found is not None and deeper_than(found, FACT_DEPTH) else found
        for found in (facts.usage, facts.diagnostics)
    )
    return ResponseFacts(usage, diagnostics, facts.response_id, facts.asked_tool)


def normalise_usage(raw: Mapping[str, object], wire: WireFormat | None = None) -> Usage:
    """warmloop's `Usage` from a usage object: read by `wire`'s own reader when the format
    is known (`WireFormat.read_usage`); recognised by its keys only when it is not (a
    logged request with no endpoint path, or a format without a reader)."""
    if wire is None or wire.read_usage is None:
        wire = claimed_by(raw, lambda fmt: fmt.claims_usage if fmt.read_usage else None)
    assert wire.read_usage is not None  # claimed only by formats with a reader
    return wire.read_usage(raw)


def read_verdict(
    diagnostics: Mapping[str, object] | None, wire: WireFormat, compared_with: str | None = None
) -> ProviderVerdict | None:
    """A request's cache diagnostics as its format's provider words them (None when the
    format reads none, or there are none)."""
    if diagnostics is None or wire.read_verdict is None:
        return None
    return wire.read_verdict(diagnostics, compared_with)


def describe_diagnostics(diagnostics: Mapping[str, object] | None, wire: WireFormat) -> str | None:
    """A request's cache diagnostics in one line, or None when there are none."""
    verdict = read_verdict(diagnostics, wire) if diagnostics else None
    return verdict.describe() if verdict is not None else None


def compared_with(body: Mapping[str, object]) -> tuple[bool, str | None]:
    """Whether a request body asked for cache diagnostics, and the earlier response it
    named (Anthropic's `diagnostics.previous_message_id`, OpenAI's
    `prompt_cache_options.comparison_response_id`)."""
    for fmt in wire_formats():
        if fmt.diagnostics_field is None:
            continue
        key, field = fmt.diagnostics_field
        asked = body.get(key)
        if isinstance(asked, Mapping) and field in asked:
            named = asked[field]
            return True, named if isinstance(named, str) else None
    return False, None


def logged_verdict(record: LoggedRequest, wire: WireFormat) -> ProviderVerdict | None:
    """The provider's verdict on a logged request: its diagnostics when the log has them;
    for an answered Anthropic request that named a previous message and got none back, the
    documented `diagnostics: null`, no divergence."""
    asked, earlier = compared_with(record.body)
    if record.diagnostics:
        return read_verdict(record.diagnostics, wire, earlier)
    answered = record.usage is not None and (record.status is None or record.status < 400)
    if wire.silence_is_unchanged and asked and earlier is not None and answered:
        return read_verdict({}, wire, earlier)
    return None
