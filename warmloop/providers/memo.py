"""What the renderers remember between renders, so a step's work is proportional to what is new.

A transcript is append-only between rewrites, and a rewrite bumps its revision: so while the
same transcript object is at the same revision, everything rendered so far is still right,
and only the messages after it need rendering. The key is the transcript's own (`key`:
branch id, revision and object), so no branch or revision is ever served another's bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from warmloop.messages import JsonValue, Message
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

WireTools = list[dict[str, JsonValue]]


class AppendMemo:
    """Which prefix of which transcript (branch, revision, object) a renderer has rendered."""

    def __init__(self) -> None:
        self._key: tuple[str, int, int] | None = None
        self._done = 0

    def sync(self, transcript: Transcript) -> tuple[int, Iterator[Message]]:
        """Where rendering resumes (0: start over) and the visible messages from there.

        A message counts as rendered once the caller moves on to the next one (or
        finishes), so a render that fails part way leaves the memo naming only what it did.
        """
        if transcript.key != self._key or self._done > len(transcript):
            self._key, self._done = transcript.key, 0
        return self._done, self._record(transcript, self._done)

    def _record(self, transcript: Transcript, start: int) -> Iterator[Message]:
        for index, message in transcript.visible(start):
            yield message
            self._done = index + 1
        self._done = len(transcript)


class ToolsMemo:
    """The tools' wire form, rebuilt only when the tools change (the same list object is
    handed out while they do not, so the canonical stream reuses its serialisation)."""

    def __init__(self, wire_tools: Callable[[Sequence[ToolSpec]], WireTools]) -> None:
        self._wire_tools = wire_tools
        self._tools: tuple[ToolSpec, ...] | None = None
        self._value: WireTools = []

    def get(self, tools: Sequence[ToolSpec]) -> WireTools:
        key = tuple(tools)
        if key != self._tools:
            self._tools = key
            self._value = self._wire_tools(key)
        return self._value
