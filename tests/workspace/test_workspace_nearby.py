"""The search that forgives (issue 50): a pattern that matches nothing exactly is read as
words (split at `_` and case, stemmed) and answered with the definitions whose names,
docstrings and headers hold them, ranked first, then the lines that do."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from warmloop.workspace import Workspace
from warmloop.workspace.definitions import parse
from warmloop.workspace.nearby import (
    MAX_DEFINITIONS_SHOWN,
    MAX_LINES_SHOWN,
    MAX_WORDS,
    SearchedFile,
    nearby,
    pattern_words,
    stem,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


def test_the_words_of_a_pattern_ignore_case_escapes_glue_and_question_words() -> None:
    assert pattern_words(r"\bMAX_INLINE_NESTING in _parser.py") == [
        "max",
        "inlin",
        "nest",
        "pars",
    ]
    assert pattern_words("parseFloat\\(") == ["pars", "float"]
    assert pattern_words("Which function computes the order totals?") == [
        "comput",
        "ord",
        "total",
    ]


def test_a_word_and_its_other_forms_stem_alike() -> None:
    assert {stem(w) for w in ("compute", "computes", "computed", "computing")} == {"comput"}
    assert stem("gzipped") == stem("gzip") == "gzip"
    assert stem("Rotating") == stem("rotates") == "rotat"
    assert stem("classes") == stem("class") == "class"
    assert stem("entries") == "entry"


@given(st.text(max_size=80))
def test_pattern_words_are_short_lowercase_and_distinct(pattern: str) -> None:
    words = pattern_words(pattern)
    assert len(words) <= MAX_WORDS
    assert len(set(words)) == len(words)
    assert all(w == w.lower() and len(w) >= 3 for w in words)


def test_a_phrase_that_matches_nothing_is_answered_with_definitions_first() -> None:
    workspace = Workspace(EXAMPLE)
    found = workspace.search("computes the order total").split("\n")
    assert found[0] == "no matches for 'computes the order total' under ."
    assert found[1].startswith("closest definitions and lines by the words 'comput', 'ord'")
    assert found[2].startswith("inventory/orders.py:19: def order_total(stock: Stock")
    assert "  # The price of an order" in found[2]  # its docstring, as the map shows it
    vat = workspace.search("vat rate").split("\n")
    assert vat[2] == "inventory/rates.py:3: VAT_RATE = 0.21"
    assert workspace.search("vat rate") == "\n".join(vat)  # deterministic
    glued = workspace.search(r"def\s+order_totals in orders.py").split("\n")
    assert glued[2].startswith("inventory/orders.py:19: def order_total(")


def test_an_exact_pattern_is_still_searched_exactly() -> None:
    workspace = Workspace(EXAMPLE)
    assert "closest" not in workspace.search("VAT_RATE")
    assert workspace.search("zzqqxx") == "no matches for 'zzqqxx' under ."
    only = workspace.search("only [0-9]+ units|only {")
    assert only.startswith("inventory/stock.py:39 in Stock.remove: raise ValueError(")


def searched(path: str, text: str) -> SearchedFile:
    return SearchedFile(path, text.split("\n"), lambda: parse(path, text).definitions)


def test_a_docstring_or_another_form_of_a_word_finds_the_definition() -> None:
    code = (
        "def _inflate(data, limit=20):\n"
        '    """Decode gzip data, at most `limit` bytes."""\n\n\n'
        "class TimedRotatingLog:\n"
        "    pass\n\n\n"
        "# decoding gzipped data is done above\n"
    )
    files = [searched("codec.py", code)]
    gzipped = nearby("decodes gzipped", files)  # in its docstring, in other forms
    assert gzipped.definitions == (
        "codec.py:1: def _inflate(data, limit=20)  # Decode gzip data, at most `limit` bytes.",
    )
    assert "codec.py:9: # decoding gzipped data is done above" in gzipped.lines
    rotates = nearby("rotates by timer", files)
    assert rotates.definitions == ("codec.py:5: class TimedRotatingLog",)


def test_rarer_words_weigh_more_and_the_lists_are_bounded() -> None:
    common = "".join(f"def common_thing_{n}():\n    pass\n" for n in range(40))
    files = [
        searched("a.py", common + "rare_marker = 1\n"),
        searched("b.py", "# rare\n# rare\n"),
    ]
    found = nearby("rare common", files)
    assert found.definitions[0] == "a.py:81: rare_marker = 1"
    assert len(found.definitions) == MAX_DEFINITIONS_SHOWN
    assert len(found.lines) == MAX_LINES_SHOWN
