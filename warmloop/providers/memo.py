"""What the renderers remember between renders, so a step's work is proportional to what is new.

A transcript is append-only between rewrites, and a rewrite bumps its version: so while the
id and version hold and the last message rendered is still in place, everything rendered so
far is still right, and only the messages after it need rendering.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from warmloop.cache.guard import Section
from warmloop.tools import ToolSpec
from warmloop.transcript import JsonValue, Message, Transcript

WireTools = list[dict[str, JsonValue]]


class AppendMemo:
    """Which prefix of which transcript (id and version) a renderer has rendered."""

    def __init__(self) -> None:
        self._key: tuple[str, int] | None = None
        self._done = 0
        self._last: Message | None = None

    def sync(self, transcript: Transcript) -> tuple[int, Iterator[Message]]:
        """The index of the first message to render (0: start over) and the messages from it.

        A message counts as rendered once the caller moves on to the next one (or finishes),
        so a render that fails part way leaves the memo naming only what it did render.
        """
        key, done = (transcript.id, transcript.version), self._done
        stale = key != self._key or done > len(transcript)
        if done and not stale:
            last = transcript[done - 1]  # still the message rendered last?
            stale = last is not self._last and last != self._last
        if stale:
            self._key, self._done, self._last = key, 0, None
        return self._done, self._record(transcript.since(self._done))

    def _record(self, new: tuple[Message, ...]) -> Iterator[Message]:
        for message in new:
            yield message
            self._done += 1
            self._last = message


class ToolsMemo:
    """The tools' wire form and its `tools` section, rebuilt only when the tools change."""

    def __init__(
        self,
        wire_tools: Callable[[Sequence[ToolSpec]], WireTools],
        dumps: Callable[[object], str],
    ) -> None:
        self._wire_tools = wire_tools
        self._dumps = dumps
        self._tools: tuple[ToolSpec, ...] | None = None
        self._value: tuple[WireTools, Section] = ([], Section("tools", ""))

    def get(self, tools: Sequence[ToolSpec]) -> tuple[WireTools, Section]:
        key = tuple(tools)
        if key != self._tools:
            self._tools = key
            wire = self._wire_tools(key)
            self._value = (wire, Section("tools", self._dumps(wire)))
        return self._value
