"""The transcript: a conversation's canonical state, as an append-only list of frozen parts.

Every part is a kind-tagged frozen dataclass; parts are values (content equality). A
`Transcript` only grows, except through two explicit rewrites (`replace_content`, `fold`)
that bump its revision and return what they replaced, for the archive. `fork` starts a new
branch with a new id, so no two branches ever share an identity (I6). The file format and
its validation live in `transcript_file`.
"""

from __future__ import annotations

import itertools
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import Field

from warmloop.errors import ConfigurationError, PairingError, TranscriptError

if TYPE_CHECKING:
    from warmloop.cache.guard import PrefixGuard

JsonValue: TypeAlias = Any
"""A JSON-serialisable value (kept loose: providers echo arbitrary shapes back)."""

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Conversation and session ids: a short safe alphabet, never a path."""
_SURROGATE = re.compile("[\ud800-\udfff]")


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
class Notice:
    """Mid-conversation system text (a newly discovered tool, the last-step warning),
    rendered in place; `only_tool` as on `UserText`."""

    text: str
    only_tool: str = ""
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
    """

    created_at: float | None = None
    updated_at: float | None = None
    last_request_at: float | None = None
    model: str = ""
    tools_fingerprint: str = ""
    parent: str = ""


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


_serials = itertools.count()


class Transcript:
    """An append-only message list with an id (this branch), a conversation (the routing
    key shared by its forks), a revision (counts rewrites) and its meta."""

    def __init__(
        self,
        messages: Sequence[Message] = (),
        *,
        id: str | None = None,
        conversation: str | None = None,
        revision: int = 0,
        meta: Meta | None = None,
    ) -> None:
        self.id = validate_id(id, "transcript id") if id is not None else new_transcript_id()
        self.conversation = validate_id(conversation) if conversation is not None else self.id
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
            raise ConfigurationError(f"revision must be an integer >= 0, got {revision!r}")
        self.revision = revision
        self.meta = meta or Meta()
        self.guard: PrefixGuard | None = None
        """The prefix guard of this conversation (runtime only, never saved); forks share
        where it left off, so a follow-up's first request is checked too."""
        self._serial = next(_serials)
        self._messages: list[Message] = []
        self._assistant_turns = 0
        self._spans: list[tuple[int, int]] = []
        for message in messages:
            if isinstance(message, Summary):
                self._spans = _add_span(self._spans, message, len(self._messages))
            self._push(message)

    def _push(self, message: Message) -> None:
        message = encodable(message)
        self._messages.append(message)
        if isinstance(message, AssistantTurn):
            self._assistant_turns += 1

    def append(self, message: Message) -> None:
        """Add one message at the end; nothing earlier ever changes."""
        if isinstance(message, Summary):
            raise TranscriptError("a Summary is added by fold(), which marks what it covers")
        self._push(message)

    def extend(self, messages: Sequence[Message]) -> None:
        """Append several messages in order."""
        for message in messages:
            self.append(message)

    @property
    def messages(self) -> tuple[Message, ...]:
        """A snapshot of every message, those a fold covers included."""
        return tuple(self._messages)

    def since(self, index: int) -> tuple[Message, ...]:
        """Every message from `index` on."""
        return tuple(self._messages[index:])

    def visible(self, start: int = 0) -> Iterator[tuple[int, Message]]:
        """`(index, message)` from `start` on, skipping what a fold covers: what is sent."""
        spans = iter(self._spans)
        span = next(spans, None)
        index = start
        while index < len(self._messages):
            while span is not None and span[1] <= index:
                span = next(spans, None)
            if span is not None and span[0] <= index:
                index = span[1]
                continue
            yield index, self._messages[index]
            index += 1

    def visible_messages(self) -> list[Message]:
        """The messages a model is shown, in order (folded spans replaced by summaries)."""
        return [message for _, message in self.visible()]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(tuple(self._messages))

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    @property
    def key(self) -> tuple[str, int, int]:
        """What a renderer's memo keys on: this object's branch and revision. Another
        object never shares it, even with the same id (I6)."""
        return (self.id, self.revision, self._serial)

    def fork(self) -> Transcript:
        """A new branch: the same messages, revision and conversation, a new id."""
        child = Transcript(
            (),
            conversation=self.conversation,
            revision=self.revision,
            meta=replace(self.meta, parent=self.id),
        )
        child._messages = list(self._messages)
        child._assistant_turns = self._assistant_turns
        child._spans = list(self._spans)
        child.guard = self.guard.copy() if self.guard is not None else None
        return child

    def assistant_turns(self) -> int:
        """How many assistant turns the transcript holds (used for call ids)."""
        return self._assistant_turns

    def pending_calls(self) -> tuple[ToolCall, ...]:
        """Calls of the newest assistant turn that have no result yet, in order."""
        for index in range(len(self._messages) - 1, -1, -1):
            message = self._messages[index]
            if isinstance(message, AssistantTurn):
                answered = {
                    m.call_id for m in self._messages[index + 1 :] if isinstance(m, ToolResult)
                }
                return tuple(c for c in message.tool_calls if c.id not in answered)
        return ()

    def answer_pending(self, reason: str) -> int:
        """Close a step cut short: every pending call gets an error result saying `reason`
        (pairing holds again, I3). Returns how many results were appended."""
        pending = self.pending_calls()
        for call in pending:
            self.append(ToolResult(call.id, call.name, reason, is_error=True))
        return len(pending)

    def replace_content(self, edits: Mapping[int, str]) -> Rewrite:
        """Replace the text of listed tool results, user texts or notices (a prune).

        Assistant turns and system text are never changed. Unchanged content is skipped,
        so repeating a rewrite is a no-op that keeps the revision.
        """
        changes: list[tuple[int, Message, Message]] = []
        for index, content in sorted(edits.items()):
            if not 0 <= index < len(self._messages):
                raise TranscriptError(f"no message {index} (the transcript has {len(self)})")
            original = self._messages[index]
            if not isinstance(original, REPLACEABLE):
                raise TranscriptError(
                    f"message {index} is a {original.kind} message, whose content is never "
                    "rewritten; only tool results, user texts and notices can be"
                )
            current = original.content if isinstance(original, ToolResult) else original.text
            if content != current:
                if isinstance(original, ToolResult):
                    changed: Message = replace(original, content=content)
                else:
                    changed = replace(original, text=content)
                changes.append((index, original, changed))
        if not changes:
            return Rewrite(self.revision)
        for index, _, changed in changes:
            self._messages[index] = changed
        self.revision += 1
        return Rewrite(self.revision, tuple((i, o) for i, o, _ in changes))

    def fold(self, start: int, end: int, text: str) -> Rewrite:
        """Cover messages `[start, end)` with a summary placed at `end` (a fold).

        The span may not split a step: it starts and ends next to a non-result message, so
        every call in it keeps its result in it (I3). Nothing is removed: the covered
        messages stay, hidden from renderers. Earlier folds are covered whole or not at all.
        """
        if not 1 <= start < end <= len(self._messages):
            raise TranscriptError(
                f"fold span [{start}, {end}) must lie within messages 1..{len(self)}"
            )
        if isinstance(self._messages[start], ToolResult):
            raise TranscriptError(f"fold span starts on a tool result (message {start})")
        if end < len(self._messages) and isinstance(self._messages[end], ToolResult):
            raise TranscriptError(f"fold span ends before a tool result (message {end})")
        if end == len(self._messages) and self.pending_calls():
            raise TranscriptError("fold span ends inside a step whose calls have no results")
        summary = Summary(text, start, end)
        spans = _add_span(self._spans, summary, end)
        shifted = [
            replace(m, start=m.start + 1, end=m.end + 1) if isinstance(m, Summary) else m
            for m in self._messages[end:]
        ]
        self._messages[end:] = [summary, *shifted]
        self._spans = [(s + 1, e + 1) if s >= end else (s, e) for s, e in spans]
        self.revision += 1
        return Rewrite(self.revision, folded=(start, end))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transcript):
            return NotImplemented
        mine = (self.id, self.conversation, self.revision, self.meta, self._messages)
        return mine == (other.id, other.conversation, other.revision, other.meta, other._messages)

    __hash__ = None  # type: ignore[assignment]  # mutable container

    def __repr__(self) -> str:
        return (
            f"Transcript(id={self.id!r}, revision={self.revision}, messages={len(self._messages)})"
        )

    def dump(self) -> str:
        """Deterministic JSON of the whole transcript (see `transcript_file`)."""
        from warmloop.transcript_file import dump

        return dump(self)

    @classmethod
    def load(cls, text: str | bytes) -> Transcript:
        """Parse and validate the output of `dump`; TranscriptError names what is wrong."""
        from warmloop.transcript_file import load

        return load(text)


def _add_span(spans: list[tuple[int, int]], summary: Summary, at: int) -> list[tuple[int, int]]:
    """The top-level hidden spans once `summary` (standing at index `at`) covers its span:
    earlier spans inside it merge into it; a partial overlap is refused."""
    start, end = summary.start, summary.end
    if not 0 <= start < end or end != at:
        raise TranscriptError(
            f"summary at message {at} covers [{start}, {end}); it must stand right after "
            "the span it covers, with start < end"
        )
    kept = []
    for s, e in spans:
        if start <= s and e <= end:
            continue  # an earlier fold, covered whole by this one
        if s < end and start < e:
            raise TranscriptError(
                f"fold span [{start}, {end}) cuts through the earlier fold [{s}, {e})"
            )
        kept.append((s, e))
    return sorted([*kept, (start, end)])


def encodable(value: Any) -> Any:
    """`value` with every lone surrogate in its text replaced by U+FFFD (the same object
    when there is none). Text enters a transcript only through this, so a transcript always
    encodes as UTF-8 (file names that are not UTF-8, `\\ud800` in model output)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, tuple | list):
        items = [encodable(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, dict):
        pairs = [(encodable(k), encodable(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if hasattr(value, "__dataclass_fields__"):
        changed = {}
        for item in fields(value):
            old = getattr(value, item.name)
            new = encodable(old)
            if new is not old:
                changed[item.name] = new
        return replace(value, **changed) if changed else value
    return value


def check_pairing(messages: Sequence[Message]) -> None:
    """Raise PairingError unless every tool call has exactly one result, in order.

    Results must follow their assistant turn, in the order of the calls, before the next
    assistant turn; call ids are unique. A trailing assistant turn whose calls are not yet
    answered is allowed only when `messages` ends there (a step in progress).
    """
    pending: list[ToolCall] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if isinstance(message, AssistantTurn):
            if pending:
                raise PairingError(
                    f"message {index}: new assistant turn while call "
                    f"{pending[0].id!r} ({pending[0].name}) has no result"
                )
            ids = [c.id for c in message.tool_calls]
            repeated = sorted({i for i in ids if ids.count(i) > 1} | (set(ids) & seen))
            if repeated:
                raise PairingError(f"message {index}: duplicate tool call ids {repeated}")
            seen.update(ids)
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
