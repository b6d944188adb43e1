"""Bounded generation (issue 37): every string the step grammar allows closes within a
bound suited to its argument, and a repeated search is never offered, checked on the real
grammar text and on llama.cpp's grammar sampler over the real Gemma vocabulary (no
weights loaded)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.protocols.test_fresh import EXAMPLE, accepts, called
from warmloop.outputs import Outputs
from warmloop.protocols.fresh import spent
from warmloop.protocols.grammar import (
    MAX_ITEMS,
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    MAX_PATTERN_CHARS,
    MAX_STRING_CHARS,
    action_grammar,
)
from warmloop.providers.local.gemma import gemma_path
from warmloop.tools.schema import ToolSpec
from warmloop.workspace import MAX_NAME_CHARS as WORKSPACE_NAME_CHARS
from warmloop.workspace import workspace_tools
from warmloop.workspace.pattern import MAX_PATTERN_CHARS as WORKSPACE_PATTERN_CHARS

# A small workspace: paths are an enum of the files that exist.
SMALL: tuple[ToolSpec, ...] = (*(t.spec for t in workspace_tools(EXAMPLE)), Outputs().spec)
# A workspace too big to enumerate: every path is a free string.
BIG: tuple[ToolSpec, ...] = tuple(replace(spec, grammar_parameters=None) for spec in SMALL)
TAGS = ToolSpec(
    "tag",
    "Tag things.",
    {
        "type": "object",
        "properties": {
            "labels": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string", "maxLength": 10},
        },
        "required": ["labels", "note"],
        "additionalProperties": False,
    },
)
# The run of issue 37: the model repeated this inside one search pattern until its output
# budget cut the string.
LOOP = "parse_value in _parser.py.*named group.*regular expression"
UNBOUNDED = re.compile(r"[)\w][*+]|\{\d+,\}")  # `char*`, `( ... )*`, `x{3,}`


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    llama_cpp = pytest.importorskip("llama_cpp")
    from warmloop.providers.local.model import quiet_llama_logs

    quiet_llama_logs()
    llama = llama_cpp.Llama(str(gemma_path()), vocab_only=True, verbose=False)
    yield llama
    llama.close()


def test_the_pattern_bound_is_within_what_the_workspace_searches() -> None:
    assert 0 < MAX_PATTERN_CHARS <= WORKSPACE_PATTERN_CHARS
    assert 0 < MAX_NAME_CHARS <= WORKSPACE_NAME_CHARS


@pytest.mark.parametrize("tools", [SMALL, BIG, (*BIG, TAGS)], ids=["small", "big", "nested"])
def test_the_grammar_has_no_unbounded_string(tools: tuple[ToolSpec, ...]) -> None:
    used = spent(called(("search", {"pattern": "total"})), tools)
    for grammar in (action_grammar(tools), action_grammar(tools, spent=used)):
        assert UNBOUNDED.search(grammar) is None, UNBOUNDED.search(grammar)
        assert "char{0," in grammar


def test_llama_cpp_parses_the_bounded_grammar(vocab: Any) -> None:
    import llama_cpp

    used = spent(called(("search", {"pattern": LOOP})), BIG)
    for grammar in (action_grammar((*BIG, TAGS)), action_grammar(BIG, spent=used)):
        sampler = llama_cpp.llama_sampler_init_grammar(
            vocab._model.vocab, grammar.encode(), b"root"
        )
        assert sampler, "llama.cpp could not parse the grammar"
        llama_cpp.llama_sampler_free(sampler)


def test_a_search_pattern_closes_within_its_bound(vocab: Any) -> None:
    for tools in (SMALL, BIG):
        grammar = action_grammar(tools)
        assert accepts(vocab, grammar, "search", {"pattern": "x" * MAX_PATTERN_CHARS})
        assert not accepts(vocab, grammar, "search", {"pattern": "x" * (MAX_PATTERN_CHARS + 1)})
        degenerate = ".*".join([LOOP] * 4)
        assert len(degenerate) > MAX_PATTERN_CHARS
        assert not accepts(vocab, grammar, "search", {"pattern": degenerate})
        assert accepts(vocab, grammar, "search", {"pattern": degenerate[:MAX_PATTERN_CHARS]})


def test_paths_answers_and_nested_strings_close_within_their_bounds(vocab: Any) -> None:
    grammar = action_grammar((*BIG, TAGS))
    for name, argument, bound in (
        ("read_file", "path", MAX_PATH_CHARS),
        ("search", "path", MAX_PATH_CHARS),
        ("submit", "answer", MAX_STRING_CHARS),
        ("find_definition", "name", MAX_NAME_CHARS),
    ):
        base = {"pattern": "x"} if name == "search" else {}
        assert accepts(vocab, grammar, name, {**base, argument: "a" * bound}), argument
        assert not accepts(vocab, grammar, name, {**base, argument: "a" * (bound + 1)}), argument
    # A schema's own, lower maxLength holds; a string in a list is bounded too.
    assert accepts(vocab, grammar, "tag", {"labels": ["b" * MAX_STRING_CHARS], "note": "n" * 10})
    assert not accepts(vocab, grammar, "tag", {"labels": [], "note": "n" * 11})
    too_long = ["b" * (MAX_STRING_CHARS + 1)]
    assert not accepts(vocab, grammar, "tag", {"labels": too_long, "note": ""})
    # A list closes within its bound too.
    assert accepts(vocab, grammar, "tag", {"labels": ["b"] * MAX_ITEMS, "note": ""})
    assert not accepts(vocab, grammar, "tag", {"labels": ["b"] * (MAX_ITEMS + 1), "note": ""})


def test_a_repeated_search_is_never_offered_and_a_fresh_one_stays_bounded(vocab: Any) -> None:
    for tools in (SMALL, BIG):
        used = spent(called(("search", {"pattern": LOOP})), tools)
        grammar = action_grammar(tools, spent=used)
        assert not accepts(vocab, grammar, "search", {"pattern": LOOP})
        assert not accepts(vocab, grammar, "search", {"pattern": LOOP + ".*named group"})
        assert accepts(vocab, grammar, "search", {"pattern": "named group"})
        fresh = "y" * MAX_PATTERN_CHARS
        assert accepts(vocab, grammar, "search", {"pattern": fresh})
        assert not accepts(vocab, grammar, "search", {"pattern": fresh + "y"})
        near = LOOP[:-1] + "z" * (MAX_PATTERN_CHARS - len(LOOP) + 1)
        assert accepts(vocab, grammar, "search", {"pattern": near})
        assert not accepts(vocab, grammar, "search", {"pattern": near + "z"})
