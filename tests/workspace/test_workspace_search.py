"""Search patterns run on RE2: Python spellings keep working, the rest is a clear tool error.

RE2 has no look-around, backreferences, atomic groups, possessive quantifiers, verbose mode
or comments (https://github.com/google/re2/wiki/Syntax); each of those gets an error that
names the feature and what to do instead. Python-only spellings of things RE2 has (`\\Z`,
`\\uXXXX`, `{,n}`) are rewritten, and a differential property test checks that a pattern
from a Python-style grammar matches exactly the lines Python's `re` matches.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.workspace_cases import Case, check, write
from warmloop.re2_syntax import to_re2
from warmloop.workspace import Workspace, split_lines
from warmloop.workspace.pattern import MAX_PATTERN_CHARS, compile_pattern

LINES = write(
    "lines.txt",
    "the end\nfoo{,2}bar\nété\nsmile 😀\n]bracket\nab12\nback\\Zslash\nNeedle\n".encode(),
)


def around(hit: str) -> str:
    """The read a search of lines.txt ends with: around its first hit (none defines a name)."""
    number = int(hit.split(":")[0])
    return (
        '[the lines around a match: read_file {"path": "lines.txt", '
        f'"start_line": {max(1, number - 2)}, "end_line": {number + 10}}}]'
    )


def found(pattern: str, *lines: str) -> Case:
    """A search over LINES that must match exactly `lines` (line numbers included)."""
    return Case(
        "search",
        {"pattern": pattern, "path": "lines.txt"},
        LINES,
        equals="\n".join([*(f"lines.txt:{line}" for line in lines), around(lines[0])]),
    )


def refused(pattern: str, message: str) -> Case:
    return Case("search", {"pattern": pattern}, LINES, error=message)


CASES: dict[str, Case] = {
    # Python spellings that RE2 writes differently, rewritten.
    "python-end-of-text": found(r"end\Z", "1: the end"),
    "python-up-to-count": found(r"^ab{,1}1", "6: ab12"),
    "literal-brace-is-not-a-count": found(r"o\{,2}b", "2: foo{,2}bar"),
    "python-unicode-escape": found(r"\u00e9t\u00e9", "3: été"),
    "python-long-unicode-escape": found(r"\U0001F600", "4: smile 😀"),
    "escaped-backslash-before-z": found(r"\\Z", "7: back\\Zslash"),
    "bracket-first-in-a-set": found(r"^[]x]", "5: ]bracket"),
    "bracket-first-in-a-negated-set": found(r"^[^]tfé sab]", "8: Needle"),
    # Syntax RE2 shares with Python (and some it adds), unchanged.
    "posix-class-in-a-set": found(r"^[[:digit:]b]+a", "7: back\\Zslash"),
    "named-group": found(r"(?P<word>bra)cket", "5: ]bracket"),
    "case-insensitive-flag": found(r"(?i)^needle$", "8: Needle"),
    "classes-and-counts": found(r"[a-z]{2}\d{2}", "6: ab12"),
    "unicode-letter-class": found(r"^\pL+$", "3: été", "8: Needle"),
    "empty-pattern-matches-every-line": Case(
        "search", {"pattern": "", "path": "lines.txt"}, LINES, shows=("lines.txt:8: Needle",)
    ),
    # What RE2 cannot do: a tool error that names the feature and the way around it.
    "look-ahead": refused("foo(?=bar)", "uses look-ahead, which search does not support"),
    "negative-look-ahead": refused("foo(?!bar)", "uses negative look-ahead"),
    "look-behind": refused("(?<=foo)bar", "uses look-behind"),
    "negative-look-behind": refused("(?<!foo)bar", "uses negative look-behind"),
    "backreference": refused(r"(a)\1", "uses backreferences"),
    "named-backreference": refused("(?P<q>a)(?P=q)", "uses named backreferences"),
    "atomic-group": refused("(?>a+)b", "uses atomic groups"),
    "possessive-quantifier": refused("a++b", "uses possessive quantifiers"),
    "comment-group": refused("(?#why)a", "uses comments"),
    "verbose-flag": refused("(?x) a b", "uses verbose mode"),
    "repetition-over-1000": refused("a{1001}", "repeats more than 1000 times"),
    "program-too-large": refused(r"\pL{1000}\pL{1000}\pL{1000}", "too large to compile"),
    "unbalanced-group": refused("needle(", "invalid regular expression 'needle('"),
    "long-invalid-pattern-is-cut": refused("(" * 999, "invalid regular expression '((((("),
    "reversed-range": refused("[z-a]", "invalid regular expression '[z-a]'"),
    "pattern-too-long": refused("x" * (MAX_PATTERN_CHARS + 1), f"more than {MAX_PATTERN_CHARS}"),
    # A model's lone surrogate is made encodable before any tool sees it (tools.py).
    "lone-surrogate-pattern": Case(
        "search", {"pattern": "a\ud800"}, equals="no matches for 'a\ufffd' under ."
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_pattern_matches_like_python_or_is_refused_clearly(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    await check(case, tmp_path, monkeypatch, pytestconfig)


async def test_pattern_quoting_the_root_never_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    # The model may paste the absolute root into a pattern RE2 rejects; the echo scrubs it.
    pattern = f"(?={tmp_path / 'ws'}/x)"
    await check(
        Case("search", {"pattern": pattern}, error="look-ahead"),
        tmp_path,
        monkeypatch,
        pytestconfig,
    )


@pytest.mark.parametrize(
    ("python", "re2"),
    [
        (r"end\Z", r"end\z"),
        ("a{,2}", "a{0,2}"),
        ("(ab){,12}c", "(ab){0,12}c"),
        (r"\u00e9", r"\x{00e9}"),
        (r"[\u00e9-\u00ff]", r"[\x{00e9}-\x{00ff}]"),
        (r"\U0001F600", r"\x{0001F600}"),
        (r"\u12", r"\u12"),  # too short to be an escape: RE2 reports it
        (r"\\Z", r"\\Z"),  # an escaped backslash, then a Z
        (r"a\{,2}", r"a\{,2}"),  # an escaped brace is literal text
        ("[{,2}]", "[{,2}]"),  # braces in a set are members
        ("[]{,2}]", "[]{,2}]"),  # a `]` first in a set does not end it
        ("[^]{,2}]", "[^]{,2}]"),
        ("[[:alpha:]{,2}]", "[[:alpha:]{,2}]"),  # nor does the `]` of a POSIX class
        ("[a]{,2}", "[a]{0,2}"),
    ],
)
def test_python_only_spellings_are_rewritten_for_re2(python: str, re2: str) -> None:
    assert to_re2(python) == re2


ATOMS = st.sampled_from(["a", "b", ".", "[ab]", "[^a]", "(a|b)", "(ab|b)", "\\d", "1"])
QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "{,2}", "{1,2}", "{2}", "*?"])
PIECES = st.lists(st.tuples(ATOMS, QUANTIFIERS).map("".join), min_size=1, max_size=4)
PATTERNS = st.builds(
    lambda flags, start, pieces, end: flags[0] + start + "".join(pieces) + end + flags[1],
    st.sampled_from([("", ""), ("", ""), ("(?s)", ""), ("(?m)", ""), ("(?-m:", ")")]),
    st.sampled_from(["", "^", "\\A", "\\b"]),
    PIECES,
    # Not \B: before 3.14 Python's \B never matches an empty line, RE2's (rightly) does.
    st.sampled_from(["", "$", "\\Z", "\\b"]),
)


@given(PATTERNS, st.text(alphabet="ab1{,}\r\n", max_size=40))
def test_search_matches_the_lines_python_re_matches(pattern: str, text: str) -> None:
    # Also pins the whole-text prefilter: it may pass a file no line matches, never skip one.
    expected = [
        (number, line.encode())
        for number, line in enumerate(split_lines(text), start=1)
        if re.search(pattern, line)
    ]
    assert list(compile_pattern(pattern).matching_lines(text.encode())) == expected


@given(st.text(max_size=40).filter(lambda p: not any(s in p for s in ("\\Z", "\\u", "\\U", "{,"))))
def test_patterns_without_python_only_spellings_are_left_alone(pattern: str) -> None:
    assert to_re2(pattern) == pattern


def test_search_names_the_files_it_could_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file over the size cap may hold the match: "no matches" alone would be a wrong
    answer, so the search says which files it did not read (and the rest still match)."""
    import warmloop.workspace as workspace_module
    from warmloop.workspace import Workspace

    monkeypatch.setattr(workspace_module, "MAX_FILE_BYTES", 64)
    (tmp_path / "big.log").write_text("needle\n" + "x" * 100)
    (tmp_path / "small.txt").write_text("hay\n")
    said = Workspace(tmp_path).search("needle")
    assert said.splitlines() == [
        "no matches for 'needle' under .",
        "[not searched: 1 file(s) too big (over 64 bytes) or unreadable: big.log; "
        "read_file says why]",
    ]
    (tmp_path / "small.txt").write_text("needle here\n")
    assert Workspace(tmp_path).search("needle").splitlines()[0] == "small.txt:1: needle here"


def test_the_read_around_a_match_names_a_file_whose_path_holds_a_line_number(
    tmp_path: Path,
) -> None:
    # `path:line: text` is ambiguous for such a path: the read comes from the match itself.
    (tmp_path / "a:1: b").mkdir()
    (tmp_path / "a:1: b" / "m.py").write_text("x = 1\ndef foo():\n    pass\n")
    said = Workspace(tmp_path).search("foo").splitlines()
    assert said[0] == "a:1: b/m.py:2: def foo():"
    assert said[-1] == (
        '[the lines around a match: read_file {"path": "a:1: b/m.py", "start_line": 1, '
        '"end_line": 12}]'
    )


def test_a_search_ends_with_the_read_around_the_definition_the_pattern_names(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.py").write_text("from b import load\n__all__ = ['load']\n")
    (tmp_path / "b.py").write_text("x = 1\n" * 20 + "def load(fp):\n    return loads(fp)\n")
    said = Workspace(tmp_path).search("load").splitlines()
    assert said[:2] == ["a.py:1: from b import load", "a.py:2: __all__ = ['load']"]
    assert said[-1] == (
        '[the lines around a match: read_file {"path": "b.py", "start_line": 19, "end_line": 31}]'
    )
    # No definition of a name the pattern matches: a definition, else the first match.
    said = Workspace(tmp_path).search(r"import|__all__ = \[").splitlines()
    assert said[-1].endswith('{"path": "a.py", "start_line": 1, "end_line": 12}]')
    said = Workspace(tmp_path).search("return").splitlines()
    assert said[-1].endswith('{"path": "b.py", "start_line": 20, "end_line": 32}]')
