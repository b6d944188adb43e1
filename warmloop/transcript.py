"""The transcript: a run's canonical state, as an append-only list of frozen message parts.

Every part is a kind-tagged frozen dataclass. Parts are values (content equality); storage
identity lives in the stores. A `Transcript` only grows; dump/load round-trips exactly, so a
loaded transcript renders byte-identical requests.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field, TypeAdapter

JsonValue: TypeAlias = Any
"""A JSON-serialisable value (kept loose: providers echo arbitrary shapes back)."""


@dataclass(frozen=True)
class SystemText:
    """Instructions at the start of the conversation."""

    text: str
    kind: Literal["system"] = "system"


@dataclass(frozen=True)
class UserText:
    """A user turn: the task, a follow-up question, a correction or an extract request."""

    text: str
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
class Notice:
    """Mid-conversation system text (e.g. a newly discovered tool), rendered in place."""

    text: str
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True)
class Summary:
    """A summary covering the messages in `[start, end)`, inserted by a fold."""

    text: str
    start: int
    end: int
    kind: Literal["summary"] = "summary"


Message: TypeAlias = Annotated[
    SystemText | UserText | AssistantTurn | ToolResult | Notice | Summary,
    Field(discriminator="kind"),
]
_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
_FORMAT = "warmloop.transcript/1"


class PairingError(ValueError):
    """A transcript whose tool calls and results do not pair up one-to-one, in order."""


def new_transcript_id() -> str:
    """A fresh random transcript id (used as the cache routing key, never in a prompt)."""
    return "t_" + secrets.token_hex(8)


class Transcript:
    """An append-only message list with a stable id; `version` counts explicit rewrites."""

    def __init__(
        self, messages: Sequence[Message] = (), *, id: str | None = None, version: int = 0
    ) -> None:
        self._messages: list[Message] = []
        self._assistant_turns = 0
        self.extend(messages)
        self.id = id or new_transcript_id()
        self.version = version

    def append(self, message: Message) -> None:
        """Add one message at the end; nothing earlier ever changes."""
        self._messages.append(message)
        if isinstance(message, AssistantTurn):
            self._assistant_turns += 1

    def extend(self, messages: Sequence[Message]) -> None:
        """Append several messages in order."""
        for message in messages:
            self.append(message)

    @property
    def messages(self) -> tuple[Message, ...]:
        """A snapshot of the messages."""
        return tuple(self._messages)

    def since(self, index: int) -> tuple[Message, ...]:
        """The messages from `index` on (renderers use it to work only on what is new)."""
        return tuple(self._messages[index:])

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(tuple(self._messages))

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    def copy(self) -> Transcript:
        """An independent transcript with the same id, version and messages."""
        return Transcript(self._messages, id=self.id, version=self.version)

    def assistant_turns(self) -> int:
        """How many assistant turns the transcript holds (used for call ids)."""
        return self._assistant_turns

    def dump(self) -> str:
        """Deterministic JSON of the whole transcript."""
        payload = {
            "format": _FORMAT,
            "id": self.id,
            "version": self.version,
            "messages": _MESSAGES.dump_python(self._messages, mode="json"),
        }
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def load(cls, text: str) -> Transcript:
        """Parse the output of `dump`; raises ValueError naming what is wrong."""
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"transcript is not valid JSON: {exc}") from exc
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise ValueError(f"not a warmloop transcript (expected format {_FORMAT!r})")
        messages = _MESSAGES.validate_python(payload["messages"])
        return cls(messages, id=str(payload["id"]), version=int(payload["version"]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transcript):
            return NotImplemented
        return (self.id, self.version, self._messages) == (
            other.id,
            other.version,
            other._messages,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable container

    def __repr__(self) -> str:
        return f"Transcript(id={self.id!r}, messages={len(self._messages)})"


def message_to_json(message: Message) -> dict[str, JsonValue]:
    """One message as a JSON-ready dict (for stores that persist message by message)."""
    result: dict[str, JsonValue] = _MESSAGES.dump_python([message], mode="json")[0]
    return result


def message_from_json(data: dict[str, JsonValue]) -> Message:
    """Inverse of `message_to_json`."""
    return _MESSAGES.validate_python([data])[0]


def check_pairing(messages: Sequence[Message]) -> None:
    """Raise PairingError unless every tool call has exactly one result, in order.

    Results must follow their assistant turn, in the order of the calls, before the next
    assistant turn. A trailing assistant turn whose calls are not yet answered is allowed
    only when `messages` ends there (a step in progress).
    """
    pending: list[ToolCall] = []
    for index, message in enumerate(messages):
        if isinstance(message, AssistantTurn):
            if pending:
                raise PairingError(
                    f"message {index}: new assistant turn while call "
                    f"{pending[0].id!r} ({pending[0].name}) has no result"
                )
            ids = [c.id for c in message.tool_calls]
            if len(set(ids)) != len(ids):
                raise PairingError(f"message {index}: duplicate tool call ids {ids}")
            pending = list(message.tool_calls)
        elif isinstance(message, ToolResult):
            if not pending:
                raise PairingError(
                    f"message {index}: result for {message.call_id!r} answers no open call"
                )
            expected = pending.pop(0)
            if expected.id != message.call_id:
                raise PairingError(
                    f"message {index}: result for {message.call_id!r}, "
                    f"expected the result of {expected.id!r} ({expected.name})"
                )
        elif pending:
            raise PairingError(
                f"message {index}: {message.kind} message while call {pending[0].id!r} "
                f"({pending[0].name}) has no result"
            )
    if pending and not isinstance(messages[-1], AssistantTurn):
        raise PairingError(f"call {pending[0].id!r} ({pending[0].name}) has no result")
