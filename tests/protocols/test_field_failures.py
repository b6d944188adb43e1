"""Issue 37's must-show 2: each failure read from the field's transcripts, as one test that
fails on 6a1cc94 (the code the field ran) by its behaviour, not by a missing name: only
what 6a1cc94 already had is imported (the workspace's search, the answer check, the step
grammar and its spent calls, the grammar sampler over the real Gemma vocabulary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tests.protocols.test_fresh import SPECS, accepts, called, vocab
from warmloop.messages import Message, ToolResult, UserText
from warmloop.protocols.fresh import spent
from warmloop.protocols.grammar import action_grammar
from warmloop.workspace import Workspace
from warmloop.workspace.grounding import unread_answer

__all__ = ["vocab"]  # the module-scoped vocabulary fixture, shared with test_fresh

# The field's json/decoder.py, cut to the lines that matter: line 7 raises inside a function.
DECODER = (
    "import re\n"
    "\n"
    "\n"
    "def py_scanstring(s, end, strict=True):\n"
    "    begin = end - 1\n"
    "    if end == len(s):\n"
    '        raise JSONDecodeError("Unterminated string starting at", s, begin)\n'
    "    return s[begin:end], end\n"
)
# The run that degenerated: the model repeated these words inside one search pattern until
# its output budget cut the string, three turns in a row.
LOOP = "parse_value in _parser.py.*named group.*regular expression"


class Answer(BaseModel):
    answer: str


def test_a_hit_shows_the_definition_its_line_is_in(tmp_path: Path) -> None:
    (tmp_path / "decoder.py").write_text(DECODER)
    shown = Workspace(tmp_path).search("Unterminated string starting at")
    assert shown.startswith("decoder.py:7 in py_scanstring: raise JSONDecodeError(")


def test_a_file_name_is_refused_as_the_function_a_task_asks_for(tmp_path: Path) -> None:
    (tmp_path / "decoder.py").write_text(DECODER)
    hit = Workspace(tmp_path).search("Unterminated string starting at")
    task = UserText("Which function raises 'Unterminated string starting at'?")
    messages: list[Message] = [task, ToolResult("call_0_0", "search", hit)]
    assert unread_answer(Answer(answer="decoder.py"), messages) is not None
    assert unread_answer(Answer(answer="decoder.py:7"), messages) is not None


def test_the_real_grammar_bounds_a_search_patterns_length(vocab: Any) -> None:
    grammar = action_grammar(SPECS)
    assert accepts(vocab, grammar, "search", {"pattern": LOOP})
    assert not accepts(vocab, grammar, "search", {"pattern": ".*".join([LOOP] * 20)})


def test_a_repeated_search_is_not_offered_nor_one_that_loops_past_it(vocab: Any) -> None:
    grammar = action_grammar(SPECS, spent=spent(called(("search", {"pattern": LOOP})), SPECS))
    assert not accepts(vocab, grammar, "search", {"pattern": LOOP})
    assert not accepts(vocab, grammar, "search", {"pattern": LOOP + ".*named group"})
    assert accepts(vocab, grammar, "search", {"pattern": "named group"})
    # The grammar that refuses the spent pattern must still close a string: a pattern that
    # leaves the spent one at its last character and loops on is refused too.
    assert accepts(vocab, grammar, "search", {"pattern": LOOP[:-1] + "z"})
    assert not accepts(vocab, grammar, "search", {"pattern": LOOP[:-1] + ".*named group" * 40})
