"""The transcript: a conversation's canonical state, as an append-only list of frozen parts.

A `Transcript` only grows, except through two explicit rewrites (`replace_content`, `fold`)
that bump its revision and return what they replaced, for the archive. `fork` starts a new
branch with a new id, so no two branches ever share an identity (I6). The parts themselves
live in `messages`, the file format and its validation in `transcript_file`.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from warmloop import transcript_file
from warmloop.errors import ConfigurationError, PairingError, TranscriptError
from warmloop.messages import (
    REPLACEABLE,
    AssistantTurn,
    Message,
    Meta,
    Rewrite,
    Summary,
    ToolCall,
    ToolResult,
    encodable,
    new_transcript_id,
    validate_id,
)

_serials = itertools.count()


class ForkableGuard(Protocol):
    """What a transcript needs of its conversation's prefix guard (`wire.guard.PrefixGuard`):
    a copy for a fork, starting where this one is."""

    def copy(self) -> ForkableGuard: ...


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
        self.guard: ForkableGuard | None = None
        """The prefix guard of this conversation (runtime only, never saved); forks share
        where it left off, so a follow-up's first request is checked too."""
        self._serial = next(_serials)
        self._messages: list[Message] = []
        self._assistant_turns = 0
        self._call_ids: set[str] = set()
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
            self._call_ids.update(c.id for c in message.tool_calls)

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
        child._call_ids = set(self._call_ids)
        child._spans = list(self._spans)
        child.guard = self.guard.copy() if self.guard is not None else None
        return child

    def assistant_turns(self) -> int:
        """How many assistant turns the transcript holds (used for call ids)."""
        return self._assistant_turns

    def unique_calls(self, turn: AssistantTurn) -> AssistantTurn:
        """`turn` with every call id that repeats an earlier call's or one before it in the
        turn renamed by `unique_call_ids`: one rule for every wire format (I3, I4)."""
        return unique_call_ids(turn, self._call_ids)

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
        return transcript_file.dump(
            transcript_file.Document(
                self.id, self.conversation, self.revision, self.meta, list(self._messages)
            )
        )

    @classmethod
    def load(cls, text: str | bytes) -> Transcript:
        """Parse and validate the output of `dump`; TranscriptError names what is wrong."""
        document = transcript_file.load(text)
        check_pairing(document.messages)
        try:
            return cls(
                document.messages,
                id=document.id,
                conversation=document.conversation,
                revision=document.revision,
                meta=document.meta,
            )
        except ConfigurationError as exc:
            raise TranscriptError(f"transcript refused: {exc}") from exc


def unique_id(wanted: str, taken: Collection[str]) -> str:
    """`wanted`, or the first of `wanted-2`, `wanted-3`, ... not in `taken`."""
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


def unique_call_ids(turn: AssistantTurn, taken: Collection[str]) -> AssistantTurn:
    """`turn` with each call id that is in `taken` or repeats an earlier call of the turn
    renamed by `unique_id`, in order; the same turn when none repeats. Pairing needs unique
    ids (I3), some hosts repeat theirs, and the same inputs give the same names (I4)."""
    ids = [c.id for c in turn.tool_calls]
    if len(set(ids)) == len(ids) and not any(i in taken for i in ids):
        return turn  # the usual case, without copying `taken`
    used = set(taken)
    calls = []
    for call in turn.tool_calls:
        call_id = unique_id(call.id, used)
        used.add(call_id)
        calls.append(call if call_id == call.id else replace(call, id=call_id))
    return replace(turn, tool_calls=tuple(calls))


def scratch_copy(transcript: Transcript) -> Transcript:
    """The same conversation (id, revision, meta, messages, guard) as a separate object, to
    apply a rewrite to before it is stored; the original stays as it was if storing fails.
    Renderer memos key on the object, so the two never share rendered bytes."""
    copy = Transcript(
        transcript.messages,
        id=transcript.id,
        conversation=transcript.conversation,
        revision=transcript.revision,
        meta=transcript.meta,
    )
    copy.guard = transcript.guard
    return copy


def _add_span(spans: list[tuple[int, int]], summary: Summary, at: int) -> list[tuple[int, int]]:
    """The top-level hidden spans once `summary` (standing at index `at`) covers its span:
    earlier folds inside it merge into it; a partial overlap is refused.

    An earlier fold `[s, e)` occupies `[s, e]`: its summary stands at `e`. It is covered
    whole only when that summary is covered too (`e < end`). A span that hides its
    messages but not its summary (the same span again, say) is a partial overlap and
    refused: the new summary would push that one past the span it covers."""
    start, end = summary.start, summary.end
    if not 0 <= start < end or end != at:
        raise TranscriptError(
            f"summary at message {at} covers [{start}, {end}); it must stand right after "
            "the span it covers, with start < end"
        )
    kept = []
    for s, e in spans:
        if start <= s and e < end:
            continue  # an earlier fold, its summary included, covered whole by this one
        if s < end and start <= e:
            raise TranscriptError(
                f"fold span [{start}, {end}) cuts through the earlier fold [{s}, {e}) "
                f"(its summary stands at message {e})"
            )
        kept.append((s, e))
    return sorted([*kept, (start, end)])


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
