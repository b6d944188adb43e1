"""Model-written search patterns, compiled for RE2: linear time, whatever the pattern.

Why RE2 (the `google-re2` package) and not a backtracking engine with a timeout (the `regex`
package's `timeout=`): a backtracking engine takes exponential time on patterns such as
`(a+)+$`, and Python's `re` does so holding the GIL, so no thread can stop it. A timeout
would bound that, but then the same files and pattern could give a result on a fast machine
and an error on a loaded one, and tool results must be byte-identical for the prompt cache
(I4). RE2 runs in time linear in the text for every pattern it accepts, so a search gives
the same answer everywhere and never hangs.

The price is syntax RE2 does not have: look-around, backreferences, atomic groups, possessive
quantifiers, verbose mode and comments. Those give an error that says so and what to do
instead. Python-only spellings of things RE2 does have (`\\Z`, `\\uXXXX`, `\\UXXXXXXXX`,
`{,n}`) are rewritten, so patterns written for Python's `re` keep working. Unlike Python's
`re`, RE2's `\\d`, `\\w`, `\\s` and `\\b` are ASCII-only; `\\pL` matches any letter.

A pattern matches one line at a time, as grep does. Calling RE2 once per line costs more than
the matching itself, so a file is first searched whole with a multi-line form of the pattern
that matches wherever some line would (a superset), and only files that pass are split.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

import re2  # type: ignore[import-untyped]

from warmloop.re2_syntax import to_re2

MAX_PATTERN_CHARS = 1_000
_SHOWN_CHARS = 120
_BACKREFERENCE = re.compile(r"invalid escape sequence: \\[1-9]")
# A flag group that turns multi-line mode off would make the whole-text form miss lines.
_MULTILINE_OFF = re.compile(r"\(\?[A-Za-z]*-[A-Za-z]*m")

# (what RE2 reports, the feature, what to do instead)
_UNSUPPORTED = (
    ("invalid perl operator: (?=", "look-ahead", "match the following text itself"),
    ("invalid perl operator: (?!", "negative look-ahead", "search, then read the matches"),
    ("invalid perl operator: (?<=", "look-behind", "match the preceding text itself"),
    ("invalid perl operator: (?<!", "negative look-behind", "search, then read the matches"),
    ("invalid perl operator: (?P", "named backreferences", "spell the repeated text out"),
    ("invalid perl operator: (?>", "atomic groups", "use a plain group"),
    ("invalid perl operator: (?#", "comments", "leave the comment out"),
    ("invalid perl operator: (?x", "verbose mode", "write the pattern without spaces"),
    ("bad repetition operator: ++", "possessive quantifiers", "use a plain quantifier"),
    ("bad repetition operator: *+", "possessive quantifiers", "use a plain quantifier"),
    ("bad repetition operator: ?+", "possessive quantifiers", "use a plain quantifier"),
)


class _Compiled(Protocol):
    def search(self, text: bytes, /) -> object: ...


def byte_lines(text: bytes) -> list[bytes]:
    """Lines as an editor numbers them: split on newlines only, `\\r\\n` tolerated."""
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [line.removesuffix(b"\r") for line in lines]


class LinePattern:
    """A compiled search pattern: which lines of a UTF-8 text it matches."""

    def __init__(self, line: _Compiled, whole: _Compiled | None) -> None:
        self._line = line
        self._whole = whole

    def matching_lines(self, text: bytes) -> Iterator[tuple[int, bytes]]:
        """(line number from 1, line) for each matching line of `text`, in order."""
        if self._whole is not None:
            # Each line loses one trailing \r; so does the text, or `$` would miss before it.
            whole = text.replace(b"\r\n", b"\n").removesuffix(b"\r") if b"\r" in text else text
            if self._whole.search(whole) is None:
                return
        for number, line in enumerate(byte_lines(text), start=1):
            if self._line.search(line) is not None:
                yield number, line


def _cut(text: str) -> str:
    """`text` short enough for an error message (RE2's quote the whole pattern)."""
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _explain(message: str, shown: str) -> str:
    for reported, feature, instead in _UNSUPPORTED:
        if message.startswith(reported):
            return _unsupported(feature, instead, shown)
    if _BACKREFERENCE.match(message):
        return _unsupported("backreferences", "spell the repeated text out", shown)
    if message.startswith("invalid repetition size"):
        return f"pattern {shown} repeats more than 1000 times ({message}); use a smaller count"
    if message.startswith("pattern too large"):
        return f"pattern {shown} is too large to compile; search for a shorter, distinctive part"
    return (
        f"invalid regular expression {shown}: {message}; escape special characters such as "
        "( [ * + ? with a backslash"
    )


def _unsupported(feature: str, instead: str, shown: str) -> str:
    return (
        f"pattern {shown} uses {feature}, which search does not support: it runs on RE2, "
        f"which guarantees linear time and so has no {feature}; {instead}"
    )


def compile_pattern(pattern: str) -> LinePattern:
    """`pattern` compiled with RE2; ValueError with a clear reason if it cannot be."""
    shown = repr(_cut(pattern))  # repr escapes lone surrogates and control characters
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"the pattern is {len(pattern)} characters, more than {MAX_PATTERN_CHARS}; "
            "search for a shorter, distinctive part"
        )
    if any("\ud800" <= char <= "\udfff" for char in pattern):
        raise ValueError(
            f"pattern {shown} contains a lone surrogate, which never occurs in file text; remove it"
        )
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise print every bad pattern to stderr
    options.never_capture = True  # search only asks whether a line matches
    try:
        line: _Compiled = re2.compile(to_re2(pattern), options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        raise ValueError(_explain(_cut(str(reason)), shown)) from None
    whole: _Compiled | None = None
    if not _MULTILINE_OFF.search(pattern):
        try:
            whole = re2.compile("(?m)" + to_re2(pattern, whole_text=True), options)
        except re2.error:
            whole = None  # e.g. too large once rewritten: lines are still searched exactly
    # re2.compile caches 128 patterns of up to 8 MiB each; searches do not reuse them, so
    # keep none beyond this one (which lives as long as the LinePattern).
    re2.purge()
    return LinePattern(line, whole)
