"""The transcript file format: deterministic JSON out, strict validation in.

`dump` writes `warmloop.transcript/2` (id, conversation, revision, meta, messages; a notice
may carry the tools it announces, `Notice.tools`, absent from older files) with a fixed key
order, so the same transcript always gives the same bytes (a transcript's text is
always encodable: see `transcript.encodable`). `load` accepts version 2
and the older version 1, and refuses anything else with one `TranscriptError` naming the
fault: not JSON, too deeply nested, a missing, extra or mistyped field, an unsafe id, broken
pairing or a bad fold span.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from warmloop.errors import ConfigurationError, TranscriptError
from warmloop.messages import (
    AnnouncedTool,
    AssistantTurn,
    JsonValue,
    Message,
    Meta,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
    encodable,
    validate_id,
)

FORMAT = "warmloop.transcript/2"
FORMAT_V1 = "warmloop.transcript/1"
_STRICT = ConfigDict(strict=True, extra="forbid")
# Strict: no null-to-"None", no float-to-int, no unknown field dropped silently.
_PARTS = (SystemText, UserText, ToolCall, AssistantTurn, ToolResult, AnnouncedTool, Notice, Summary)
for _part in (*_PARTS, Meta):
    setattr(_part, "__pydantic_config__", _STRICT)  # noqa: B010  # read by pydantic

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)
_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
_META: TypeAdapter[Meta] = TypeAdapter(Meta)
_TOP_KEYS = {
    FORMAT: {"format", "id", "conversation", "revision", "meta", "messages"},
    FORMAT_V1: {"format", "id", "version", "messages"},
}


def message_to_json(message: Message) -> dict[str, JsonValue]:
    """One message as a JSON-ready dict (stores persist message by message)."""
    result: dict[str, JsonValue] = _MESSAGE.dump_python(message, mode="json")
    return result


def message_from_json(data: str | bytes) -> Message:
    """One message from the JSON text of `message_to_json`, strictly validated."""
    try:
        return _MESSAGE.validate_json(_json(encodable(json.loads(data))))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise TranscriptError(f"not a valid transcript message: {exc}") from exc
    except ValidationError as exc:
        raise TranscriptError(f"not a valid transcript message: {_describe(exc)}") from exc


def messages_from_json(bodies: Sequence[str]) -> list[Message]:
    """Many messages from their `dumps_message` texts, strictly validated in one pass (a
    stored session loads this way; `Transcript` makes their text encodable as it takes
    them). The count is checked, so no body can pass for two."""
    try:
        messages = _MESSAGES.validate_json("[" + ",".join(bodies) + "]")
    except ValidationError as exc:
        raise TranscriptError(f"not valid transcript messages: {_describe(exc)}") from exc
    if len(messages) != len(bodies):
        raise TranscriptError(f"{len(bodies)} message texts held {len(messages)} messages")
    return messages


def dumps_message(message: Message) -> str:
    """One message as compact, UTF-8-encodable JSON text: `json.dumps` of
    `message_to_json(message)`, written by pydantic in one call (a step's store and
    transcript file each write it) where no float can occur. Both write text, escapes,
    integers, true, false and null alike; they differ only on floats (`1e-05` and
    `0.00005`), which only an assistant turn's `provider_details` can hold."""
    if not (isinstance(message, AssistantTurn) and message.provider_details):
        try:
            return _MESSAGE.dump_json(message).decode()
        except (PydanticSerializationError, UnicodeError):  # a lone surrogate, say
            pass
    return _json(message_to_json(message))


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Document(NamedTuple):
    """A transcript file's content, validated: everything `Transcript` is built from."""

    id: str
    conversation: str
    revision: int
    meta: Meta
    messages: list[Message]


def dump(document: Document) -> str:
    """Deterministic JSON of a whole transcript."""
    payload = {
        "format": FORMAT,
        "id": document.id,
        "conversation": document.conversation,
        "revision": document.revision,
        "meta": _META.dump_python(document.meta, mode="json"),
        "messages": _MESSAGES.dump_python(document.messages, mode="json"),
    }
    return _json(payload)


def _describe(error: ValidationError, limit: int = 3) -> str:
    problems = []
    for item in error.errors()[:limit]:
        where = ".".join(str(p) for p in item["loc"]) or "(top level)"
        problems.append(f"{where}: {item['msg']}")
    more = error.error_count() - limit
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")


def _parse(text: str | bytes) -> dict[str, object]:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TranscriptError(f"transcript is not UTF-8 text ({exc.reason})") from exc
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"transcript is not valid JSON ({exc})") from exc
    except RecursionError as exc:
        raise TranscriptError("transcript JSON is nested too deeply to be a transcript") from exc
    if not isinstance(payload, dict) or payload.get("format") not in _TOP_KEYS:
        raise TranscriptError(
            f"not a warmloop transcript (expected format {FORMAT!r} or {FORMAT_V1!r})"
        )
    expected = _TOP_KEYS[payload["format"]]
    missing, extra = expected - payload.keys(), payload.keys() - expected
    if missing or extra:
        raise TranscriptError(
            f"transcript fields do not match {payload['format']!r}: "
            f"missing {sorted(missing)}, unexpected {sorted(extra)}"
        )
    return payload


def load(text: str | bytes) -> Document:
    """Parse and validate a dumped transcript (all but its pairing, which `Transcript`
    checks); TranscriptError names what is wrong."""
    payload = _parse(text)
    meta_data: object = {}
    if payload["format"] == FORMAT_V1:
        revision, conversation = payload["version"], payload["id"]
    else:
        revision, conversation = payload["revision"], payload["conversation"]
        meta_data = payload["meta"]
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
        raise TranscriptError(f"revision must be an integer >= 0, got {revision!r}")
    # Validated from JSON text: strict JSON mode takes arrays for tuples. The text is made
    # encodable first, as everything entering a transcript is.
    try:
        messages = _MESSAGES.validate_json(_json(encodable(payload["messages"])))
    except ValidationError as exc:
        raise TranscriptError(f"transcript messages are not valid: {_describe(exc)}") from exc
    try:
        meta = _META.validate_json(_json(encodable(meta_data)))
    except ValidationError as exc:
        raise TranscriptError(f"transcript meta is not valid: {_describe(exc)}") from exc
    try:
        transcript_id = validate_id(payload["id"], "transcript id")
        conversation_id = validate_id(conversation)
    except ConfigurationError as exc:
        raise TranscriptError(f"transcript refused: {exc}") from exc
    return Document(transcript_id, conversation_id, revision, meta, list(messages))
