"""What a search that matched nothing would have matched: the closest lines and names.

A pattern that matches nothing is most often the right words in the wrong shape: a file
name glued to an identifier (`MAX_INLINE_NESTING in _parser.py`), the question's own
words, another case or spelling of a name (`vat rate` for `VAT_RATE`), an over-escaped
regex. Its words (letters and digits, split at `_`, case changes and regex escapes,
case-insensitive) are looked for as substrings in every searched line; each word weighs
more the fewer lines hold it, and the lines and identifiers that hold the most weight
are offered (a line that defines such a name first among equals), so the next step has
somewhere to go. Pure and deterministic.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_WORDS = 8
MAX_LINES_SHOWN = 8
MAX_NAMES_SHOWN = 8
MIN_WORD_CHARS = 3
STOP_WORDS = frozenset(
    {
        *("and", "are", "does", "for", "from", "how", "its", "not", "that", "the", "this"),
        *("what", "which", "where", "who", "with", "file", "line", "value", "function"),
        *("name", "def", "class", "return"),
    }
)
"""Words of a question, not of code: they would only rank lines by noise."""

ESCAPE = re.compile(r"\\.")
PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
DEFINITION = re.compile(
    r"^\s*(?:(?:async\s+)?def|class|function|fn|func|const|let|var|type|struct|enum)\s+(\w+)"
    r"|^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)"
)
"""A line that defines a name (`def f`, `class C`, `NAME = ...`): where an answer lives."""


def pattern_words(pattern: str) -> list[str]:
    """The pattern's words, lower-case, in order, without repeats or question words:
    `\\bMAX_INLINE_NESTING in _parser.py` gives max, inline, nesting, parser. A plural's
    last `s` is dropped (`totals` finds `total`): words are matched as substrings."""
    words: list[str] = []
    for piece in PIECES.findall(ESCAPE.sub(" ", pattern)):
        word = piece.lower()
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if len(word) >= MIN_WORD_CHARS and word not in STOP_WORDS and word not in words:
            words.append(word)
    return words[:MAX_WORDS]


@dataclass(frozen=True)
class Nearby:
    """The closest lines (`path:line: text`) and identifiers to a pattern's words."""

    words: tuple[str, ...]
    lines: tuple[str, ...]
    names: tuple[str, ...]

    def describe(self) -> str:
        """The text a search appends to its "no matches" line ("" when nothing is close)."""
        if not self.lines:
            return ""
        quoted = ", ".join(repr(w) for w in self.words)
        parts = [f"closest lines by the words {quoted} (case-insensitive):", *self.lines]
        if self.names:
            parts.append(f"closest names: {', '.join(self.names)}")
        return "\n".join(parts)


def nearby(pattern: str, files: Sequence[tuple[str, Sequence[str]]]) -> Nearby:
    """The lines of `files` (each a shown path and its lines) and the identifiers in them
    that hold the most of the pattern's words, rarest words weighing most."""
    words = pattern_words(pattern)
    if not words:
        return Nearby((), (), ())
    lowered = [
        (path, n, line, line.lower()) for path, lines in files for n, line in enumerate(lines, 1)
    ]
    held = {w: sum(1 for *_, low in lowered if w in low) for w in words}
    weight = {w: math.log((len(lowered) + 1) / (held[w] + 0.5)) for w in words if held[w]}
    if not weight:
        return Nearby(tuple(words), (), ())
    scored = []
    for path, number, line, low in lowered:
        score = sum(weight[w] for w in weight if w in low)
        defined = DEFINITION.match(line)
        if score > 0 and defined:  # the definition of a name the words spell ranks first
            name = (defined[1] or defined[2]).lower()
            score += sum(weight[w] for w in weight if w in name) / 2
        if score > 0:
            scored.append((-score, path, number, line.strip()))
    scored.sort()
    best = scored[:MAX_LINES_SHOWN]
    shown = tuple(f"{path}:{number}: {text[:200]}" for _, path, number, text in best)
    names: dict[str, float] = {}
    for _, _, _, text in scored[: MAX_LINES_SHOWN * 4]:
        for name in IDENTIFIER.findall(text):
            if keyword.iskeyword(name):
                continue
            low = name.lower()
            names[name] = sum(weight[w] for w in weight if w in low)
    ranked = sorted((n for n, s in names.items() if s > 0), key=lambda n: (-names[n], len(n), n))
    return Nearby(tuple(words), shown, tuple(ranked[:MAX_NAMES_SHOWN]))
