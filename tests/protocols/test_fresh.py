"""What the grammar stops offering: spent calls (pure), and the real grammar refusing them
on the Gemma vocabulary; the grammar-only path enums of the workspace tools; the taught
protocol's worked examples."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.providers.test_local import grammar_accepts, step_text
from warmloop.messages import AssistantTurn, Message, ToolCall, ToolResult, UserText
from warmloop.outputs import Outputs
from warmloop.protocols import react_text
from warmloop.protocols.fresh import Spent, main_argument, spent
from warmloop.protocols.grammar import action_grammar
from warmloop.providers.local.gemma import gemma_path
from warmloop.tools.schema import ToolSpec
from warmloop.workspace import MAX_GRAMMAR_PATHS, workspace_tools

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
SPECS: tuple[ToolSpec, ...] = (*(t.spec for t in workspace_tools(EXAMPLE)), Outputs().spec)


def called(*calls: tuple[str, dict[str, Any]]) -> list[Message]:
    """A task, then each call and a result for it."""
    messages: list[Message] = [UserText("task")]
    for index, (name, arguments) in enumerate(calls):
        call = ToolCall(f"call_{index}_0", name, json.dumps(arguments))
        messages += [AssistantTurn(tool_calls=(call,)), ToolResult(call.id, name, "result")]
    return messages


def test_a_call_in_its_broadest_form_spends_its_main_value() -> None:
    used = spent(
        called(("search", {"pattern": "total"}), ("read_file", {"path": "config.toml"})), SPECS
    )
    assert used.values == (
        ("read_file", "path", ("config.toml",)),
        ("search", "pattern", ("total",)),
    )
    assert used.tools == frozenset()


def test_a_paged_read_spends_nothing_and_a_bare_listing_spends_the_tool() -> None:
    used = spent(
        called(
            ("read_file", {"path": "config.toml", "start_line": 2}),
            ("list_files", {"path": "."}),  # "." is the default: the whole listing
            ("search", {"pattern": "total", "path": "inventory"}),
        ),
        SPECS,
    )
    assert used.values == (("search", "pattern", ("total",)),)
    assert used.tools == frozenset({"list_files"})


def test_after_a_refused_submit_the_next_step_looks_before_it_answers_again() -> None:
    looked = called(("search", {"pattern": "total"}))
    refused = ToolCall("call_9_0", "submit", '{"answer": "42"}')
    answered = [
        *looked,
        AssistantTurn(tool_calls=(refused,)),
        ToolResult(refused.id, "submit", "Not accepted yet", is_error=True),
    ]
    assert "submit" in spent(answered, SPECS).tools
    read = ToolCall("call_10_0", "read_file", '{"path": "config.toml", "start_line": 1}')
    again = [*answered, AssistantTurn(tool_calls=(read,)), ToolResult(read.id, "read_file", "1")]
    assert "submit" not in spent(again, SPECS).tools
    assert ("submit", "answer", ("42",)) in spent(again, SPECS).values  # not offered again
    look = ToolCall("call_11_0", "search", '{"pattern": "42"}')
    looked_up = [*again, AssistantTurn(tool_calls=(look,)), ToolResult(look.id, "search", "")]
    assert spent(looked_up, SPECS).values == (("search", "pattern", ("42", "total")),)
    only_submit = spent(answered, (Outputs().spec,))
    assert only_submit.tools == frozenset()  # nothing else to do: submit stays


def test_submit_waits_for_the_first_observation() -> None:
    assert spent([UserText("task")], SPECS).tools == frozenset({"submit"})
    assert "submit" not in spent(called(("list_files", {"path": "data"})), SPECS).tools
    only_submit = (Outputs().spec,)
    assert spent([UserText("task")], only_submit) == Spent()


def test_main_argument_is_the_first_required_string_else_an_optional_first_string() -> None:
    names = {spec.name: main_argument(spec) for spec in SPECS}
    assert names == {
        "list_files": "path",
        "read_file": "path",
        "search": "pattern",
        "find_definition": "name",
        "submit": "answer",
    }
    add = ToolSpec("add", "Add.", {"properties": {"a": {"type": "integer"}}})
    assert main_argument(add) is None


@given(st.lists(st.sampled_from(["total", "tot", "VAT", "", 'a"b']), max_size=5))
def test_spent_is_deterministic_and_its_key_orders_values(patterns: list[str]) -> None:
    messages = called(*[("search", {"pattern": p}) for p in patterns])
    first, again = spent(messages, SPECS), spent(list(messages), SPECS)
    assert first == again
    assert first.key() == again.key()
    backwards = called(*[("search", {"pattern": p}) for p in reversed(patterns)])
    assert first.key() == spent(backwards, SPECS).key()


# ---- the real grammar on the Gemma vocabulary (no weights loaded) ----


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    llama_cpp = pytest.importorskip("llama_cpp")
    from warmloop.providers.local.model import quiet_llama_logs

    quiet_llama_logs()
    llama = llama_cpp.Llama(str(gemma_path()), vocab_only=True, verbose=False)
    yield llama
    llama.close()


def accepts(vocab: Any, grammar: str, name: str, arguments: dict[str, Any]) -> bool:
    return bool(grammar_accepts(vocab, grammar, step_text("x", name, arguments)))


def test_the_grammar_offers_only_paths_that_exist(vocab: Any) -> None:
    grammar = action_grammar(SPECS)
    assert accepts(vocab, grammar, "read_file", {"path": "inventory/orders.py"})
    assert not accepts(vocab, grammar, "read_file", {"path": "inventory/order.py"})
    assert not accepts(vocab, grammar, "read_file", {"path": "inventory"})  # a directory
    # A search or listing always covers the whole (small) workspace.
    assert accepts(vocab, grammar, "search", {"pattern": "VAT"})
    assert not accepts(vocab, grammar, "search", {"pattern": "VAT", "path": "inventory"})
    assert accepts(vocab, grammar, "list_files", {})
    assert not accepts(vocab, grammar, "list_files", {"path": "data"})


def test_the_grammar_never_offers_a_spent_call_nor_a_narrower_one(vocab: Any) -> None:
    used = spent(
        called(
            ("search", {"pattern": "total"}),
            ("read_file", {"path": "config.toml"}),
            ("list_files", {}),
        ),
        SPECS,
    )
    grammar = action_grammar(SPECS, spent=used)
    assert not accepts(vocab, grammar, "search", {"pattern": "total"})
    assert not accepts(vocab, grammar, "search", {"pattern": "totals"})  # a subset of matches
    for fresh in ("tota", "Total", "order_total", "t", ""):
        assert accepts(vocab, grammar, "search", {"pattern": fresh}), fresh
    assert not accepts(vocab, grammar, "read_file", {"path": "config.toml"})
    assert accepts(vocab, grammar, "read_file", {"path": "README.md"})
    assert not accepts(vocab, grammar, "list_files", {})
    assert accepts(vocab, grammar, "submit", {"answer": "order_total"})


def test_before_any_observation_the_grammar_does_not_offer_submit(vocab: Any) -> None:
    grammar = action_grammar(SPECS, spent=spent([UserText("task")], SPECS))
    assert not accepts(vocab, grammar, "submit", {"answer": "a guess"})
    assert accepts(vocab, grammar, "list_files", {})


def test_after_looking_again_the_grammar_offers_any_answer_but_the_refused_one(
    vocab: Any,
) -> None:
    refused = ToolCall("call_8_0", "submit", '{"answer": "142"}')
    read = ToolCall("call_9_0", "read_file", '{"path": "config.toml", "start_line": 1}')
    messages = [
        *called(("search", {"pattern": "total"})),
        AssistantTurn(tool_calls=(refused,)),
        ToolResult(refused.id, "submit", "Not accepted yet", is_error=True),
    ]
    grammar = action_grammar(SPECS, spent=spent(messages, SPECS))
    assert not accepts(vocab, grammar, "submit", {"answer": "1"})
    assert accepts(vocab, grammar, "read_file", {"path": "config.toml", "start_line": 1})
    messages += [AssistantTurn(tool_calls=(read,)), ToolResult(read.id, "read_file", "1 | x")]
    grammar = action_grammar(SPECS, spent=spent(messages, SPECS))
    assert not accepts(vocab, grammar, "submit", {"answer": "142"})
    assert accepts(vocab, grammar, "submit", {"answer": "1"})


# ---- the taught protocol ----


def test_the_taught_protocol_has_worked_examples_and_no_placeholders() -> None:
    taught = react_text.teach(SPECS)
    assert "<" not in taught.split("Available tools:")[0]
    assert 'Action: {"tool": "read_file", "arguments": {"path": "data/rooms.csv"}}' in taught
    assert 'Action: {"tool": "submit", "arguments": {"answer": "billing@example.com"}}' in taught


def test_examples_are_taught_only_for_tools_that_accept_their_calls() -> None:
    lookup = ToolSpec(
        "lookup",
        "Look up a key.",
        {"properties": {"key": {"type": "string"}}, "required": ["key"], "type": "object"},
    )
    taught = react_text.teach([lookup, Outputs().spec])
    assert "search" not in taught
    assert "settings.toml" not in taught
    assert 'Action: {"tool": "submit", "arguments": {"answer": "36"}}' in taught
    assert "Example" not in react_text.teach([lookup])


def test_path_enums_are_grammar_only_and_only_for_a_workspace_small_enough(
    tmp_path: Path,
) -> None:
    for spec in SPECS:
        assert "enum" not in json.dumps(spec.full())  # what any model is shown
    read = next(s for s in SPECS if s.name == "read_file")
    assert read.grammar_parameters is not None
    for n in range(MAX_GRAMMAR_PATHS + 1):
        (tmp_path / f"f{n}.txt").write_text("x")
    big = {t.name: t.spec for t in workspace_tools(tmp_path)}
    assert all(spec.grammar_parameters is None for spec in big.values())


@pytest.mark.parametrize(
    "value",
    [
        r"\bVAT_RATE\b",  # a regex with backslashes: JSON writes each as \\
        'say "hi"',  # quotes
        "a/b/c",  # JSON may write / as \/
        "tab\there",  # a control character with a short escape
    ],
)
def test_a_spent_value_is_refused_however_json_spells_it(vocab: Any, value: str) -> None:
    grammar = action_grammar(SPECS, spent=spent(called(("search", {"pattern": value})), SPECS))
    step = step_text("x", "search", {"pattern": value})
    assert not grammar_accepts(vocab, grammar, step)
    slashed = step.replace("/", "\\/")  # the same value, another spelling
    assert not grammar_accepts(vocab, grammar, slashed)
    for other in (value[:-1], "x" + value):
        if not other.startswith(value):
            assert accepts(vocab, grammar, "search", {"pattern": other}), other


@settings(max_examples=25, deadline=None)
@given(
    used=st.lists(st.text(st.sampled_from('ab\\"/\n\t'), min_size=1, max_size=4), max_size=3),
    tried=st.text(st.sampled_from('ab\\"/\n\tc'), max_size=5),
)
def test_the_no_repeat_rule_holds_for_every_value(vocab: Any, used: list[str], tried: str) -> None:
    calls = [("search", {"pattern": value}) for value in used]
    grammar = action_grammar(SPECS, spent=spent(called(*calls), SPECS))
    fresh = not any(tried.startswith(value) for value in used)
    assert accepts(vocab, grammar, "search", {"pattern": tried}) == fresh
