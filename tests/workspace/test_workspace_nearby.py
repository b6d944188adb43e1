"""A search that matches nothing offers the closest lines and names by the pattern's words."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from warmloop.workspace import Workspace
from warmloop.workspace.nearby import MAX_LINES_SHOWN, MAX_WORDS, nearby, pattern_words

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


def test_the_words_of_a_pattern_ignore_case_escapes_glue_and_question_words() -> None:
    assert pattern_words(r"\bMAX_INLINE_NESTING in _parser.py") == [
        "max",
        "inline",
        "nesting",
        "parser",
    ]
    assert pattern_words("parseFloat\\(") == ["parse", "float"]
    assert pattern_words("Which function computes the order totals?") == [
        "compute",
        "order",
        "total",
    ]


@given(st.text(max_size=80))
def test_pattern_words_are_short_lowercase_and_distinct(pattern: str) -> None:
    words = pattern_words(pattern)
    assert len(words) <= MAX_WORDS
    assert len(set(words)) == len(words)
    assert all(w == w.lower() and len(w) >= 3 for w in words)


def test_a_search_that_finds_nothing_offers_what_would_have_matched() -> None:
    workspace = Workspace(EXAMPLE)
    found = workspace.search("vat rate")
    assert found.startswith("no matches for 'vat rate' under .\nclosest lines by the words")
    assert "inventory/rates.py:3: VAT_RATE = 0.21" in found
    assert "closest names: VAT_RATE" in found
    glued = workspace.search(r"def\s+order_totals in orders.py")
    first = glued.split("\n")[2]
    assert first.startswith("inventory/orders.py:19: def order_total(")
    assert workspace.search("vat rate") == found  # deterministic


def test_a_search_with_matches_or_no_known_word_offers_nothing_more() -> None:
    workspace = Workspace(EXAMPLE)
    assert "closest" not in workspace.search("VAT_RATE")
    assert workspace.search("zzqqxx") == "no matches for 'zzqqxx' under ."


def test_rarer_words_weigh_more_and_the_list_is_bounded() -> None:
    common = [f"common thing {n}" for n in range(40)]
    files = [("a.py", [*common, "rare_common_marker = 1"]), ("b.py", ["rare"] * 2)]
    found = nearby("rare common", files)
    assert found.lines[0] == "a.py:41: rare_common_marker = 1"
    assert len(found.lines) == MAX_LINES_SHOWN
    assert found.names[0] == "rare_common_marker"
