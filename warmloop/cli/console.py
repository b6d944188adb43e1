"""A terminal that shows control characters instead of obeying them.

File contents, tool results, model output and stored session fields reach the screen in the
live view, `show`, `sessions` and `audit`. A raw ESC there lets whatever wrote the text
retitle the window, clear the screen or write the clipboard (OSC 52). `SafeConsole`
escapes every control character (C0 but newline and tab, DEL, C1) and the bidirectional
overrides that can disguise text, in all text it renders; rich's own styling travels
outside the text, so colours still work. `json_text` does the same for JSON printed raw.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with each control character written as an escape (`\\x1b`, `\\u202e`);
    newlines and tabs stay. The same object back when there is nothing to escape."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def json_text(text: str) -> str:
    """JSON text safe to print: control characters inside strings as `\\u` escapes (JSON
    already escapes C0; this adds DEL, C1 and the bidirectional overrides)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


class SafeConsole(Console):
    """A rich Console whose rendered text never carries a raw control character."""

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            # Control segments are rich's own cursor moves; everything else is text.
            if segment.control is None and _UNSAFE.search(segment.text):
                yield Segment(printable(segment.text), segment.style)
            else:
                yield segment


def console(*, stderr: bool = False) -> SafeConsole:
    """A console for the CLI: control characters escaped, no automatic highlighting.
    Created per command, not at import: it must write to the sys.stdout of the moment
    (click's test runner swaps it)."""
    return SafeConsole(stderr=stderr, highlight=False)
