"""The map of a workspace in the opening (issue 50): what each file defines, as the file
spells it, ranked into a budget, the same bytes for the same files, parsed once per file
content across processes, and read by the answer check as what the run has seen."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel

from warmloop.messages import Message, SystemText, UserText
from warmloop.workspace import Workspace, workspace_instructions
from warmloop.workspace.code_index import CodeIndex
from warmloop.workspace.code_map import MAP_HEADER, map_lines, workspace_map
from warmloop.workspace.definitions import parse
from warmloop.workspace.grounding import unread_answer
from warmloop.workspace.map_build import map_budget
from warmloop.workspace.map_cache import MapCache

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


class Answer(BaseModel):
    answer: str


def index_of(root: Path) -> CodeIndex:
    return CodeIndex.build(Workspace(root).source_files())


def test_a_python_file_is_read_as_its_definitions_spelled_as_the_file_spells_them() -> None:
    text = (
        '"""Rates."""\n'
        "import os\n"
        "from .base import Base as Root\n"
        "LIMIT = 2**31-1  # the largest\n"
        "try:\n"
        "    import gzip\n"
        "except ImportError:\n"
        "    gzip = None\n"
        "class Fee(\n"
        "    Root,\n"
        "):\n"
        '    """A fee on an order."""\n'
        "    rate = 0.5\n"
        "    def apply(\n"
        "        self, net: float,  # before VAT\n"
        "    ) -> float:\n"
        "        return net\n"
    )
    parsed = parse("pkg/fee.py", text)
    found = {d.name: d for d in parsed.definitions}
    assert found["LIMIT"].header == "LIMIT = 2**31-1"  # the file's text, not ast.unparse's
    assert found["gzip"].header == "gzip = None"  # inside a try at the top level
    assert found["Fee"].header == "class Fee(Root)"
    assert found["Fee"].bases == ("Root",)
    assert found["Fee"].summary == "A fee on an order."
    assert found["Fee.rate"].header == "rate = 0.5"
    assert found["Fee.apply"].header == "def apply(self, net: float) -> float"
    assert found["Fee.apply"].line == 14
    assert parsed.doc == "Rates."
    imported = {i.name: (i.module, i.original) for i in parsed.imports}
    assert imported["Root"] == (".base", "Base")
    assert imported["os"] == ("os", "")


def test_settings_and_source_of_other_languages_are_read_by_their_lines() -> None:
    settings = parse("config.toml", '[reorder]\nthreshold = 5\n\n[catalog]\nfeatured = "hinges"\n')
    assert [(d.name, d.header) for d in settings.definitions] == [
        ("reorder.threshold", "threshold = 5"),
        ("catalog.featured", 'featured = "hinges"'),
    ]
    script = parse("app.js", "export function total(lines) {\n  return 1;\n}\nclass Cart {\n}\n")
    assert [(d.name, d.kind) for d in script.definitions] == [
        ("total", "function"),
        ("Cart", "class"),
    ]
    assert parse("broken.py", "def (:\n").definitions == ()


def test_the_example_workspace_map_holds_every_file_and_definition() -> None:
    mapped = workspace_map(index_of(EXAMPLE))
    lines = mapped.text.split("\n")
    assert lines[0] == MAP_HEADER
    for path in ("README.md", "config.toml", "data/items.csv", "inventory/stock.py"):
        assert path in lines
    assert "  def order_total(stock: Stock, lines: list[OrderLine]) -> float" in mapped.text
    assert "  VAT_RATE = 0.21" in lines
    assert '  featured = "hinges"' in lines
    assert "  [catalog]" in lines
    assert "    methods: add, remove, to_reorder, value" in lines
    assert (mapped.shown, mapped.total) == (15, 15)
    assert "[the map shows" not in mapped.text  # nothing was left out


def test_a_map_over_its_budget_keeps_files_and_public_names_and_says_what_it_left_out(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    for n in range(30):
        body = "".join(f'def _helper_{n}_{k}(x):\n    """Helps {k}."""\n\n' for k in range(10))
        body += (
            f'class Public{n}:\n    """The public class {n}."""\n    def run(self):\n        pass\n'
        )
        (package / f"mod{n:02}.py").write_text(body)
    mapped = workspace_map(index_of(tmp_path), budget_tokens=600)
    assert len(mapped.text) <= 600 * 3
    lines = mapped.text.split("\n")
    assert all(f"pkg/mod{n:02}.py" in lines for n in range(30))  # every file first
    assert all(f"  class Public{n}" in mapped.text for n in range(30))  # then public names
    helpers = mapped.text.count("def _helper_")
    assert 0 < helpers < 300  # private names, in the room that is left
    assert "# Helps" not in mapped.text  # their docstrings first of all
    assert (
        lines[-1]
        == f"[the map shows {mapped.shown} of 330 top-level definitions; search finds the rest]"
    )


def test_the_same_files_give_the_same_map_byte_for_byte(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(EXAMPLE, copy)
    assert workspace_map(index_of(EXAMPLE)).text == workspace_map(index_of(copy)).text
    # A line added inside a body moves the lines below it but changes no definition: the
    # map, and so the opening, stay as they were.
    stock = copy / "inventory" / "stock.py"
    code = "        held = self.items.get(item.sku)\n"
    stock.write_text(stock.read_text().replace(code, f"        # one SKU, one item\n{code}"))
    assert workspace_map(index_of(EXAMPLE)).text == workspace_map(index_of(copy)).text
    rates = copy / "inventory" / "rates.py"
    rates.write_text(rates.read_text().replace("0.21", "0.19"))
    assert "  VAT_RATE = 0.19" in workspace_map(index_of(copy)).text


def test_a_second_build_parses_nothing_and_a_changed_file_alone_is_parsed_again(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    cache = MapCache(tmp_path / "maps")
    first = workspace_instructions(root, cache=cache)[1]
    assert (first.changed, first.cost.parsed, first.cost.files) == (None, 7, 7)
    again = workspace_instructions(root, cache=cache)[1]  # as a second process would
    assert (again.changed, again.cost.parsed) == (False, 0)
    assert "unchanged" in again.describe()
    rates = root / "inventory" / "rates.py"
    rates.write_text(rates.read_text().replace("0.21", "0.19"))
    changed = workspace_instructions(root, cache=cache)[1]
    assert (changed.changed, changed.cost.parsed) == (True, 1)
    assert "the workspace changed since the last map" in changed.describe()


def test_a_damaged_map_cache_is_a_cold_build_not_a_failure(tmp_path: Path) -> None:
    cache = MapCache(tmp_path / "maps")
    instructions = workspace_instructions(EXAMPLE, cache=cache)[0]
    cache.path(EXAMPLE).write_text(json.dumps({"version": 1, "parsed": {"x": {"definitions": 3}}}))
    rebuilt, build = workspace_instructions(EXAMPLE, cache=cache)
    assert (rebuilt, build.cost.parsed) == (instructions, 7)


def test_the_instructions_end_with_the_map_that_the_answer_check_reads_back() -> None:
    instructions = workspace_instructions(EXAMPLE)[0]
    assert instructions.split("\n\n", 1)[1].startswith(MAP_HEADER)
    lines = map_lines(f"Be brief. {instructions}\n\nWork in steps.")
    assert lines[0] == "README.md"
    assert "Work in steps." not in lines


@pytest.mark.parametrize(
    ("task", "answer", "accepted"),
    [
        ("What is the VAT rate?", "0.21", True),  # a constant's value the map shows
        ("Which function computes the order total?", "order_total", True),  # a definition
        ("Which file defines the Stock class?", "inventory/stock.py", True),
        ("Which function computes the order total?", "compute_total", False),  # not there
        ("Which function computes the order total?", "Stock.add", False),  # a method listed
    ],
)
def test_the_answer_check_counts_the_map_as_seen(task: str, answer: str, accepted: bool) -> None:
    instructions = workspace_instructions(EXAMPLE)[0]
    messages: list[Message] = [SystemText(instructions), UserText(task)]
    assert (unread_answer(Answer(answer=answer), messages) is None) is accepted
    # Without the map in the run's messages, nothing was seen.
    assert unread_answer(Answer(answer=answer), messages[1:]) is not None


def test_the_map_takes_an_eighth_of_a_small_window_and_at_most_its_default() -> None:
    assert map_budget(8192) == 1024
    assert map_budget(4096) == 512
    assert map_budget(200_000) == 1024
    assert map_budget(None) == 1024


def test_where_the_files_alone_fill_the_map_nothing_is_parsed_and_the_shallow_ones_show(
    tmp_path: Path,
) -> None:
    for n in range(200):
        (tmp_path / "deep" / "er").mkdir(parents=True, exist_ok=True)
        (tmp_path / "deep" / "er" / f"module_{n:03}.py").write_text(f"def f{n}():\n    pass\n")
    (tmp_path / "zz_a_long_name_at_the_root_of_it.py").write_text("NAME = 'x'\n")
    text, build = workspace_instructions(tmp_path, budget_tokens=300)
    assert (build.cost.files, build.cost.parsed) == (201, 0)
    assert (
        "\nzz_a_long_name_at_the_root_of_it.py\n" in text
    )  # the file at the root is kept before the deep ones
