"""The parts a conversation is made of: frozen, kind-tagged message dataclasses (values,
content equality), the conversation's meta, the record of a rewrite, and the rules every
text and id obeys on the way in (encodable text, safe ids).

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Annotated, Any, Literal, TypeAlias, TypeVar, cast

from pydantic import Field

from warmloop.errors import ConfigurationError

JsonValue: TypeAlias = Any
"""A JSON-serialisable value (kept loose: providers echo arbitrary shapes back)."""
JsonData: TypeAlias = str | int | float | bool | list["JsonData"] | dict[str, "JsonData"] | None
"""A decoded JSON value whose shape the type checker follows: code narrows it (isinstance)
before reading into it. For values warmloop decodes or builds itself; `JsonValue` stays
loose for what providers echo back."""
JsonObject: TypeAlias = dict[str, "JsonData"]
"""A decoded JSON object (a tool call's arguments, a task's inputs)."""

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Conversation and session ids: a short safe alphabet, never a path."""
_SURROGATE = re.compile("[\ud800-\udfff]")
T = TypeVar("T")


@dataclass(frozen=True)
class SystemText:
    """Instructions at the start of the conversation."""

    text: str
    kind: Literal["system"] = "system"


@dataclass(frozen=True)
class UserText:
    """A user turn: the task, a follow-up question, a correction or an extract request.

    `only_tool` names the one tool the loop accepts next (the extract request sets it),
    so a provider can constrain decoding without reading the text.
    """

    text: str
    only_tool: str = ""
    kind: Literal["user"] = "user"


@dataclass(frozen=True)
class ToolCall:
    """One tool call; `arguments` is the model's raw JSON string, kept byte-for-byte."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class AssistantTurn:
    """One model turn: text, reasoning, tool calls, and provider data to echo back exactly."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    provider_details: dict[str, JsonValue] = field(default_factory=dict)
    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolResult:
    """The result of one tool call (`is_error` marks a failure the model should see)."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class AnnouncedTool:
    """A tool's full description as a notice teaches it: `parameters` is its JSON schema as
    text, kept byte-for-byte so the announcement renders the same after any round-trip."""

    name: str
    description: str
    parameters: str


@dataclass(frozen=True)
class Notice:
    """Mid-conversation system text (the last-step warning, newly discovered tools),
    rendered in place; `only_tool` as on `UserText`. `tools` makes it an announcement:
    the full descriptions of tools disclosed after the tool block was fixed."""

    text: str
    only_tool: str = ""
    tools: tuple[AnnouncedTool, ...] = ()
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True)
class Summary:
    """A fold's summary of the messages `[start, end)`; it stands at index `end`, right
    after the span it covers, and renderers show it in the span's place."""

    text: str
    start: int
    end: int
    kind: Literal["summary"] = "summary"


Message: TypeAlias = Annotated[
    SystemText | UserText | AssistantTurn | ToolResult | Notice | Summary,
    Field(discriminator="kind"),
]
REPLACEABLE = (ToolResult, UserText, Notice)
"""Kinds whose content a rewrite may replace; assistant turns and system text never change."""


@dataclass(frozen=True)
class Meta:
    """What a conversation knows about itself besides its messages (never rendered).

    Times are Unix seconds. `last_request_at` is when the last model request was sent
    (maintenance decides from it whether the provider's cache is still warm).
    `context_window` is a window the provider named when it rejected a prompt as too long:
    a fact about this conversation's model that outlives the run. `told_window` is the
    window the user stated for that model (`context_window=`, `--context-window`), kept so
    a resumed run that states none runs with it again. `cache_minimum`, `cache_survived`
    and `cache_evicted` are what the conversation's runs learned of that model's cache from
    the wire: the least prompt it was seen to cache, where below the table's minimum, and
    how many returns inside the TTL found the cache or found it evicted (`memory.py`).
    """

    created_at: float | None = None
    updated_at: float | None = None
    last_request_at: float | None = None
    model: str = ""
    tools_fingerprint: str = ""
    parent: str = ""
    context_window: int | None = None
    told_window: int | None = None
    cache_minimum: int | None = None
    cache_survived: int = 0
    cache_evicted: int = 0


@dataclass(frozen=True)
class Rewrite:
    """What one rewrite did: the revision it created and the originals it replaced
    (`(index, message)`, for the archive); `folded` is a fold's `(start, end)` span."""

    revision: int
    replaced: tuple[tuple[int, Message], ...] = ()
    folded: tuple[int, int] | None = None


def new_transcript_id() -> str:
    """A fresh random transcript id (used as the cache routing key, never in a prompt)."""
    return "t_" + secrets.token_hex(8)


def validate_id(value: object, what: str = "conversation id") -> str:
    """`value` if it is a safe id (letters, digits, `_`, `-`; 1 to 64 characters)."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise ConfigurationError(
            f"{what} {value!r} is not allowed: use 1 to 64 letters, digits, '_' or '-'"
        )
    return value


def encodable(value: T) -> T:
    """`value` with every lone surrogate in its text replaced by U+FFFD (the same object
    when there is none). Text enters a transcript only through this, so a transcript always
    encodes as UTF-8 (file names that are not UTF-8, `\\ud800` in model output)."""
    # The one cast: a type checker cannot follow that each branch of `_encodable` rebuilds
    # a value as its own type (a str, a list or tuple, a dict, a dataclass).
    return cast(T, _encodable(value))


def _encodable(value: object) -> object:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, tuple | list):
        items = [_encodable(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, dict):
        pairs = [(_encodable(k), _encodable(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for item in fields(value):
            old = getattr(value, item.name)
            new = _encodable(old)
            if new is not old:
                changed[item.name] = new
        return replace(value, **changed) if changed else value
    return value
