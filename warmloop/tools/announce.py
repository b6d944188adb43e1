"""Announcements: the transcript part that teaches discovered tools, and what a transcript
has already taught.

A tool found after the tool block was fixed is taught by one notice appended to the
transcript, carrying its full description (`Notice.tools`; a description over
`MAX_ANNOUNCED_DESCRIPTION` characters is cut, saying so); renderers show it in place on
every wire format. What a conversation has been taught is read back from its transcript,
never remembered beside it, so a resumed session, a follow-up and a fresh process agree,
and a fold that hides an announcement lets the tool be announced again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from warmloop.messages import AnnouncedTool, Notice
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

MAX_ANNOUNCED_DESCRIPTION = 4_000
"""The most of a discovered tool's description an announcement carries (characters): what a
catalog or an MCP server lists is untrusted, and a 5 MB description would enter the
transcript, and every later request, whole."""
NO_TAG = "\\u003c"
"""`<` as a JSON string escape: how text from outside spells it inside a wrapper."""


def untagged(text: str) -> str:
    """`text` (JSON, or a listing quoting it) with no `<` that could open or close a tag. In
    JSON text a `<` can only be inside a string, where `\\u003c` means the same."""
    return text.replace("<", NO_TAG)


def announced_tool(spec: ToolSpec) -> AnnouncedTool:
    """A tool's full description as an announcement carries it (compact JSON schema)."""
    schema = json.dumps(spec.parameters, ensure_ascii=False, separators=(",", ":"))
    return AnnouncedTool(spec.name, bounded(spec.description), schema)


def bounded(description: str) -> str:
    """`description` cut to MAX_ANNOUNCED_DESCRIPTION characters, saying how much was cut."""
    cut = len(description) - MAX_ANNOUNCED_DESCRIPTION
    if cut <= 0:
        return description
    return f"{description[:MAX_ANNOUNCED_DESCRIPTION]} [description cut: {cut:,} more characters]"


def announcement(specs: Iterable[ToolSpec], gateway: str, code: str = "") -> Notice:
    """The notice that teaches `specs` once: called through `gateway`, and as functions in
    `code` when code mode is on."""
    tools = tuple(announced_tool(s) for s in specs)
    one = len(tools) == 1
    how = f"call {'it' if one else 'them'} with {gateway}"
    if code:
        how += f" or as {'a function' if one else 'functions'} in {code}"
    noun = "tool" if one else "tools"
    return Notice(f"Discovered {noun}; {how}. Full description{'' if one else 's'}:", tools=tools)


def taught_in(transcript: Transcript, start: int = 0) -> set[str]:
    """Names of the tools announced by notices a model is shown, from message `start` on."""
    names: set[str] = set()
    for _, message in transcript.visible(start):
        if isinstance(message, Notice):
            names.update(t.name for t in message.tools)
    return names


class Taught:
    """What one conversation's transcript has taught (by default the tools its
    announcements describe; `scan` reads something else from messages `start` on), scanned
    incrementally: a transcript only grows between rewrites, and a rewrite (a new
    revision) or another branch changes its key, which scans it afresh."""

    def __init__(self, scan: Callable[[Transcript, int], set[str]] = taught_in) -> None:
        self._scan = scan
        self._key: tuple[str, int, int] | None = None
        self._scanned = 0
        self._names: frozenset[str] = frozenset()

    def __call__(self, transcript: Transcript) -> frozenset[str]:
        if transcript.key != self._key:
            self._key, self._scanned, self._names = transcript.key, 0, frozenset()
        if self._scanned < len(transcript):
            self._names |= self._scan(transcript, self._scanned)
            self._scanned = len(transcript)
        return self._names
