"""Search hits and reads name the definition their lines are in (issue 37).

Asked "which function raises 'Unterminated string starting at'?", a model that searched the
message saw `decoder.py:85: raise JSONDecodeError(...)` and submitted `decoder.py`: the hit
named the file, never the function. Now the hit says `decoder.py:85 in py_scanstring: ...`.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.workspace.test_workspace_grounding import Answer, seen
from warmloop.workspace import Workspace, workspace_tools
from warmloop.workspace.grounding import unread_answer

DECODER = '''"""A JSON decoder."""
import re


class JSONDecoder:
    """Decodes."""

    def raw_decode(self, s, idx=0):
        if not s:
            raise ValueError("Expecting value")
        def helper():
            return idx
        return helper()


@functools.cache
def py_scanstring(s, end):
    if end > len(s):
        raise JSONDecodeError("Unterminated string starting at", s, end)
    return s


LIMIT = 10
'''
SCANNER_JS = """export function scan(text) {
  if (!text) {
    throw new Error("Unterminated string starting at");
  }
}
class Lexer {
  fn next() {
    return 1;
  }
}
"""


def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "decoder.py").write_text(DECODER)
    (tmp_path / "scanner.js").write_text(SCANNER_JS)
    (tmp_path / "notes.txt").write_text("def not_code():\n    Unterminated string starting at\n")
    (tmp_path / "broken.py").write_text("def broken(:\n    Unterminated string starting at\n")
    return Workspace(tmp_path)


def test_a_hit_names_the_function_its_line_is_in(tmp_path: Path) -> None:
    found = workspace(tmp_path).search("Unterminated string starting at").split("\n")
    assert found[:4] == [
        "broken.py:2: Unterminated string starting at",  # does not parse: no outline
        'decoder.py:19 in py_scanstring: raise JSONDecodeError("Unterminated string '
        'starting at", s, end)',
        "notes.txt:2: Unterminated string starting at",  # not source
        'scanner.js:3 in scan: throw new Error("Unterminated string starting at");',
    ]


def test_nested_definitions_are_qualified_and_a_def_line_is_in_what_encloses_it(
    tmp_path: Path,
) -> None:
    found = workspace(tmp_path).search("def |LIMIT|return", "decoder.py").split("\n")
    assert found[:7] == [
        "decoder.py:8 in JSONDecoder: def raw_decode(self, s, idx=0):",
        "decoder.py:11 in JSONDecoder.raw_decode: def helper():",
        "decoder.py:12 in JSONDecoder.raw_decode.helper: return idx",
        "decoder.py:13 in JSONDecoder.raw_decode: return helper()",
        "decoder.py:17: def py_scanstring(s, end):",
        "decoder.py:20 in py_scanstring: return s",
        "decoder.py:23: LIMIT = 10",
    ]
    assert (
        workspace(tmp_path)
        .search("return 1", "scanner.js")
        .startswith("scanner.js:8 in Lexer.next: return 1;")
    )


def test_a_read_says_which_definition_its_first_line_is_in(tmp_path: Path) -> None:
    files = workspace(tmp_path)
    assert files.read_file("decoder.py", 18, 19).split("\n")[0] == (
        "decoder.py: lines 18-19 of 23, in py_scanstring"
    )
    assert files.read_file("decoder.py", 1, 3).split("\n")[0] == "decoder.py: lines 1-3 of 23"


def test_the_function_a_hit_names_is_an_answer_the_run_has_seen(tmp_path: Path) -> None:
    results = seen(workspace(tmp_path).search("Unterminated string starting at"))
    assert unread_answer(Answer(answer="py_scanstring"), results) is None
    assert unread_answer(Answer(answer="scan"), results) is None
    read = seen(workspace(tmp_path).read_file("decoder.py", 18, 19), tool="read_file")
    assert unread_answer(Answer(answer="py_scanstring"), read) is None


def test_a_file_past_the_parser_has_no_outline_and_still_searches(tmp_path: Path) -> None:
    heads = {
        "nested": "x = " + "[" * 100_000 + "]" * 100_000,  # SyntaxError: too deeply nested
        "long_sum": "x = 1" + " + 1" * 300_000,  # RecursionError building the tree
        "negations": "x = " + "-" * 200_000 + "1",  # MemoryError in the parser
    }
    for name, head in heads.items():
        (tmp_path / f"{name}.py").write_text(f"{head}\ndef f():\n    needle = 1\n")
        found = workspace(tmp_path).search("needle", f"{name}.py")
        assert found.startswith(f"{name}.py:3: needle = 1"), name


@given(st.text(alphabet=" \n\tdefclasfunio():{}x_[]\"'#@=", max_size=300))
def test_any_text_outlines_without_error_as_names_only(text: str) -> None:
    from warmloop.workspace.outline import Outline

    for path in ("a.py", "a.js", "a.txt"):
        outline = Outline.of(path, text)
        for line in range(len(text.splitlines()) + 2):
            name = outline.at(line)
            assert name is None or all(part.isidentifier() for part in name.split("."))


def test_the_tool_descriptions_are_the_ones_the_eval_measured(tmp_path: Path) -> None:
    # The enclosing name is shown by the hits themselves; describing it in the tools' words
    # moved the embedded model's first searches (issue 37). Changing these words needs a
    # run of `python -m benchmarks local_eval` (docs/benchmarks.md).
    described = {tool.name: tool.spec.description for tool in workspace_tools(tmp_path)}
    assert described["search"] == (
        "Search files under a path for a regex (RE2 syntax); each match is `path:line: text`."
    )
    assert described["read_file"] == (
        "Read a text file with numbered lines, optionally lines start_line..end_line only."
    )
