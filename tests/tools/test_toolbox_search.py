"""search_tools' ranking (BM25F): pure, deterministic, independent of catalog order, a
tool named exactly comes first, and matches share a word with the query."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.toolbox_session import catalog
from warmloop.tools import search
from warmloop.tools.schema import ToolSpec
from warmloop.tools.search import Index, stem, terms

SPECS = [t.spec for t in catalog()]
INDEX = Index(SPECS)
WORDS = st.sampled_from(
    [
        "get",
        "create",
        "invoice",
        "weather",
        "forecast",
        "share",
        "document",
        "tickets",
        "route",
        "count",
        "deploy",
        "email",
        "calendar",
        "event",
        "metrics",
        "refund",
        "chat",
        "message",
        "zebra",
    ]
)


def test_names_split_at_underscores_and_camel_case_and_plurals_fold() -> None:
    assert terms("getWeatherForecast") == ["get", "weather", "forecast"]
    assert terms("search_tickets HTTPServer") == ["search", "ticket", "http", "server"]
    assert stem("searches") == "search"
    assert stem("queries") == "query"
    assert stem("class") == "class"


def test_the_catalog_tools_are_found_by_what_they_do() -> None:
    index = INDEX
    assert index.rank("get weather forecast", 1)[0][0] == "get_forecast"
    assert index.rank("share a document with someone", 1)[0][0] == "share_document"
    assert index.rank("count deployments", 1)[0][0] == "count_deployments"
    assert index.rank("zebra", 5) == []


@settings(max_examples=25, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=4), st.permutations(range(len(SPECS))))
def test_ranking_never_depends_on_the_catalog_order(words: list[str], order: list[int]) -> None:
    query = " ".join(words)
    shuffled = Index([SPECS[i] for i in order])
    assert shuffled.rank(query, 10) == INDEX.rank(query, 10)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SPECS))
def test_a_tool_named_exactly_ranks_first(spec: ToolSpec) -> None:
    assert INDEX.rank(spec.name, 3)[0][0] == spec.name


@settings(max_examples=60, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=4))
def test_every_match_shares_a_term_with_the_query(words: list[str]) -> None:
    query = " ".join(words)
    wanted = set(terms(query))
    by_name = {s.name: s for s in SPECS}
    for name, score in INDEX.rank(query, 20):
        spec = by_name[name]
        text = f"{spec.name} {spec.description} {spec.parameters}"
        assert score > 0
        assert wanted & set(terms(text))


def test_the_exact_name_outranks_a_tool_that_says_the_word_more_often() -> None:
    # By BM25F alone the second tool wins (its name and description repeat the word, and
    # the first tool's long description dilutes it); a query that is a tool's exact name
    # still means that tool.
    exact = ToolSpec("copy", "Duplicate an object into a bucket " + "in place " * 30, {})
    louder = ToolSpec("copy_copy", "Copy, copy and copy again.", {})
    other = ToolSpec("delete", "Delete an object.", {})
    index = Index([exact, louder, other])
    assert index.score(index.documents[1], terms("copy")) > index.score(
        index.documents[0], terms("copy")
    )
    assert index.rank("copy", 3)[0][0] == "copy"


def test_the_module_docstring_states_the_field_weights_the_code_uses() -> None:
    doc = " ".join((search.__doc__ or "").split())
    stated = re.search(
        r"name \(split at .*?weight ([\d.]+)\), its description \(([\d.]+)\) and its argument "
        r"names and descriptions \(([\d.]+)\)",
        doc,
    )
    assert stated is not None, "the docstring no longer states the field weights"
    assert tuple(float(w) for w in stated.groups()) == (
        search.WEIGHTS["name"],
        search.WEIGHTS["description"],
        search.WEIGHTS["arguments"],
    )
