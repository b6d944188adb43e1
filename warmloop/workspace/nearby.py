"""The search that forgives: what a search that matched nothing exactly would have meant.

A pattern that matches nothing is most often the right words in the wrong shape: a phrase
of the question (`computes the order total`), a file name glued to an identifier
(`MAX_INLINE_NESTING in _parser.py`), another case or spelling of a name (`vat rate` for
`VAT_RATE`), another form of a word (`gzipped` for `gzip`, `rotates` for `Rotating`). So
the pattern is read as words: letters and digits split at `_`, case changes and regex
escapes, lower-cased, question words dropped, and stemmed (`computes`, `computed` and
`compute` are one word; `TimedRotatingFileHandler` holds `tim`, `rotat`, `file`, `handl`).
The words are matched against the identifiers, docstrings and comments of the searched
files, split the same way, each weighing more the fewer lines hold it. The answer ranks
definitions first (a name that spells the words, a docstring that holds them), each shown
as the map shows it, then the lines that hold the most of them; so a phrase finds the
function it describes. An exact pattern is still searched exactly first: this runs only
when that matched nothing. Pure and deterministic.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from warmloop.workspace.definitions import Definition, one_line

MAX_WORDS = 8
MAX_DEFINITIONS_SHOWN = 6
MAX_LINES_SHOWN = 6
MIN_WORD_CHARS = 3
MAX_SUMMARY_CHARS = 72
NAME_WEIGHT, DOC_WEIGHT, HEADER_WEIGHT = 2.0, 1.0, 0.5
"""How much a word counts in a definition's name, its docstring, and the rest of its header."""
STOP_WORDS = frozenset(
    {
        *("and", "are", "does", "for", "from", "how", "its", "not", "that", "the", "this"),
        *("what", "which", "where", "who", "with", "file", "line", "value", "function"),
        *("name", "def", "class", "return", "method", "many", "much", "whose", "when"),
        *("into", "one", "any", "all", "has", "have", "give", "defines", "uses"),
    }
)
"""Words of a question, not of code: they would only rank lines by noise (compared
stemmed, so `defines` goes with `define` and `defined`)."""

ESCAPE = re.compile(r"\\.")
PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
DEFINITION = re.compile(
    r"^\s*(?:(?:async\s+)?def|class|function|fn|func|const|let|var|type|struct|enum)\s+(\w+)"
    r"|^\s*([A-Z_a-z]\w*)\s*(?::[^=]*)?=(?!=)"
)
"""A line that defines a name (`def f`, `class C`, `NAME = ...`): where an answer lives."""
SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ed", "ers", "er", "ies", "es", "s", "ly")
VOWELS_AND_DOUBLES = frozenset("aeiouls")
"""Doubled letters kept when a suffix goes (`call`, `class`); others are one (`gzipp`)."""
NOTE = "closest definitions and lines by the words "
"""How the answer starts (after "no matches ... ;"): it echoes the pattern's words."""


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """`word` lower-cased without its ending: `computes`, `computed`, `computing` and
    `compute` give `comput`; `gzipped` gives `gzip`; `classes` gives `class`."""
    stemmed = word.lower()
    for suffix in SUFFIXES:
        if not stemmed.endswith(suffix) or len(stemmed) - len(suffix) < MIN_WORD_CHARS:
            continue
        if suffix == "s" and stemmed.endswith("ss"):
            break  # `class`, `address`: no plural to drop
        stemmed = stemmed[: -len(suffix)] + ("y" if suffix == "ies" else "")
        if stemmed[-1] == stemmed[-2] and stemmed[-1] not in VOWELS_AND_DOUBLES:
            stemmed = stemmed[:-1]
        break
    if len(stemmed) > MIN_WORD_CHARS and stemmed.endswith("e"):
        stemmed = stemmed[:-1]
    return stemmed


STOP_STEMS = frozenset(stem(word) for word in STOP_WORDS)


def words(text: str) -> list[str]:
    """The stemmed words of `text` (identifiers split at `_` and case changes, regex
    escapes read as gaps), in order, repeats kept."""
    return [stem(p) for p in PIECES.findall(ESCAPE.sub(" ", text)) if len(p) > 1]


def pattern_words(pattern: str) -> list[str]:
    """The pattern's words, stemmed, in order, without repeats or question words:
    `\\bMAX_INLINE_NESTING in _parser.py` gives max, inlin, nest, parser."""
    found: list[str] = []
    for word in words(pattern):
        if len(word) >= MIN_WORD_CHARS and word not in STOP_STEMS and word not in found:
            found.append(word)
    return found[:MAX_WORDS]


@dataclass(frozen=True)
class SearchedFile:
    """A file a search read: its path as shown, its lines, and the definitions in it with
    the definition each line is in (for `path:line in NAME: text`)."""

    path: str
    lines: Sequence[str]
    defines: Callable[[], Sequence[Definition]] = tuple
    """The file's definitions, read only when some word of the pattern is in the files."""
    within: Callable[[int], str | None] = lambda line: None


@dataclass(frozen=True)
class Nearby:
    """The definitions and lines (each as a hit) closest to a pattern's words."""

    words: tuple[str, ...]
    definitions: tuple[str, ...]
    lines: tuple[str, ...]

    def describe(self) -> str:
        """The text a search appends to its "no matches" line ("" when nothing is close)."""
        if not self.definitions and not self.lines:
            return ""
        quoted = ", ".join(repr(w) for w in self.words)
        head = (
            f"{NOTE}{quoted} (names split at _ and case, docstrings and comments; word "
            "endings ignored), definitions first:"
        )
        return "\n".join([head, *self.definitions, *self.lines])


def nearby(pattern: str, files: Sequence[SearchedFile]) -> Nearby:
    """The definitions of `files` whose names, docstrings and headers hold the most of the
    pattern's words, then the lines that do, rarest words weighing most."""
    wanted = pattern_words(pattern)
    if not wanted:
        return Nearby((), (), ())
    total = sum(len(f.lines) for f in files)
    # A line can hold a stem only if it holds its letters: only those lines are split.
    stems = [
        (f, n, line, set(words(line)))
        for f in files
        for n, line in enumerate(f.lines, 1)
        if any(w in line.lower() for w in wanted)
    ]
    held = {w: sum(1 for *_, found in stems if w in found) for w in wanted}
    weight = {w: math.log((total + 1) / (held[w] + 0.5)) for w in wanted if held[w]}
    if not weight:
        return Nearby(tuple(wanted), (), ())
    ranked = sorted(
        (
            (-score, f.path, d.line, d.name, f, d)
            for f in {id(f): f for f, *_ in stems}.values()  # a file with a word's letters
            for d in f.defines()
            if (score := _definition_score(d, weight)) > 0
        ),
        key=lambda r: r[:4],
    )
    shown = [(f.path, d.line) for *_, f, d in ranked[:MAX_DEFINITIONS_SHOWN]]
    # A shown definition's docstring line says again what its hit already shows.
    said = [(f.path, d.summary[:40]) for *_, f, d in ranked[:MAX_DEFINITIONS_SHOWN] if d.summary]
    definitions = tuple(_definition_hit(f, d) for *_, f, d in ranked[:MAX_DEFINITIONS_SHOWN])
    lines = sorted(
        (
            (-score, f.path, n, f, line)
            for f, n, line, found in stems
            if (f.path, n) not in shown
            and not any(path == f.path and summary in line for path, summary in said)
            and (score := sum(weight.get(w, 0) for w in found)) > 0
        ),
        key=lambda r: r[:3],
    )
    hits = tuple(_line_hit(f, n, line) for _, _, n, f, line in lines[:MAX_LINES_SHOWN])
    return Nearby(tuple(wanted), definitions, hits)


def _definition_score(definition: Definition, weight: dict[str, float]) -> float:
    """How much of the words a definition holds: each word once, at the weight of the
    best place it is in (its name, its docstring, its header)."""
    name = set(words(definition.short))
    doc = set(words(definition.doc))
    header = set(words(definition.header))
    score = 0.0
    for word, rarity in weight.items():
        if word in name:
            score += NAME_WEIGHT * rarity
        elif word in doc:
            score += DOC_WEIGHT * rarity
        elif word in header:
            score += HEADER_WEIGHT * rarity
    return score


def _definition_hit(file: SearchedFile, definition: Definition) -> str:
    """A definition as a hit: `path:line: header  # docstring`, with `in Class` for a member."""
    outer = definition.name.rsplit(".", 1)[0] if not definition.top_level else ""
    within = f" in {outer}" if outer else ""
    summary = one_line(definition.summary, MAX_SUMMARY_CHARS)
    doc = f"  # {summary}" if summary else ""
    return f"{file.path}:{definition.line}{within}: {definition.header}{doc}"


def _line_hit(file: SearchedFile, number: int, line: str) -> str:
    within = file.within(number)
    where = f" in {within}" if within else ""
    return f"{file.path}:{number}{where}: {line.strip()[:200]}"
