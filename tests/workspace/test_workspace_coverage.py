"""A definition that names fewer of the task's words than a neighbour the run has seen is
not taken unread; an exception is a class a task may ask for."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from warmloop.messages import AssistantTurn, Message, ToolCall, ToolResult, UserText
from warmloop.workspace.coverage import covered, fuller, task_words
from warmloop.workspace.grounding import unread_answer
from warmloop.workspace.task_words import quoted_in


class Answer(BaseModel):
    answer: str


def asked(task: str, answer: str, *results: tuple[str, str]) -> str | None:
    observed = [ToolResult(f"call_{n}", tool, text) for n, (tool, text) in enumerate(results)]
    return unread_answer(Answer(answer=answer), [UserText(task), *observed])


SKIP = "\n".join(
    [
        "tomllib/_parser.py:84 in loads: pos = skip_chars(src, pos, TOML_WS)",
        "tomllib/_parser.py:232: def skip_chars(src: str, pos: Pos, chars: Iterable[str]) -> Pos:",
        "tomllib/_parser.py:263: def skip_comment(src: str, pos: Pos) -> Pos:",
        "tomllib/_parser.py:275: def skip_comments_and_array_ws(src: str, pos: Pos) -> Pos:",
    ]
)
TASK = "Which function in tomllib skips a comment?"


def test_a_name_that_says_less_of_the_task_than_a_seen_neighbour_is_refused() -> None:
    problem = asked(TASK, "skip_chars", ("search", SKIP))
    assert problem is not None
    assert "names fewer of the task's words (skip) than skip_comment (comment, skip)" in problem
    assert '{"tool": "submit", "arguments": {"answer": "skip_comment"}}' in problem
    assert '"path": "tomllib/_parser.py", "start_line": 230' in problem  # skip_chars's lines
    assert asked(TASK, "skip_comment", ("search", SKIP)) is None
    # the longer name covers the same words: no closer, so not a reason to refuse
    assert asked(TASK, "skip_comments_and_array_ws", ("search", SKIP)) is None


def test_an_answer_whose_lines_the_run_read_stands() -> None:
    read = "tomllib/_parser.py: lines 232-240 of 700\n 232 | def skip_chars(src, pos, chars):"
    assert asked(TASK, "skip_chars", ("search", SKIP), ("read_file", read)) is None
    looked = "tomllib/_parser.py:232: def skip_chars(src: str, pos: Pos, chars) -> Pos:"
    assert asked(TASK, "skip_chars", ("search", SKIP), ("find_definition", looked)) is None


def test_a_task_that_quotes_a_line_or_names_no_words_is_not_read_for_them() -> None:
    quoting = "Which function raises 'Bad comment'?"
    raising = SKIP + "\ntomllib/_parser.py:90: def raise_error(src, pos, message):"
    assert asked(quoting, "skip_chars", ("search", raising)) is None
    assert asked("Which function is used?", "skip_chars", ("search", SKIP)) is None
    # the package's own name is no word of what is asked: every name there may say it
    scanner = "json/scanner.py:15: def py_make_scanner(context):\njson/x.py:3: def json_scan():"
    assert (
        asked("Which function in json is the scanner?", "py_make_scanner", ("search", scanner))
        is None
    )


def test_an_abbreviation_covers_the_word_it_starts_but_a_short_word_does_not() -> None:
    wanted = task_words("Which function in json is the pure-Python scanner factory?", ["json"])
    assert wanted == {"pur", "python", "scan", "factory"}
    assert covered("py_make_scanner", wanted) == {"python", "scan"}
    assert covered("make_scanner", wanted) == {"scan"}
    assert covered("match_to_datetime", task_words("the tomllib parser", [])) == set()


def test_a_searched_exception_seen_defined_answers_which_exception() -> None:
    task = "Which exception does zoneinfo raise when no time zone has the key asked for?"
    hits = "zoneinfo/_common.py:161: class ZoneInfoNotFoundError(KeyError):"
    call = ToolCall("s", "search", '{"pattern": "ZoneInfoNotFoundError"}')
    messages: list[Message] = [
        UserText(task),
        AssistantTurn(tool_calls=(call,)),
        ToolResult("s", "search", hits),
    ]
    assert unread_answer(Answer(answer="ZoneInfoNotFoundError"), messages) is None
    # one the language defines, shown raised: an answer though no file defines it
    raised = ("search", "a.py:9 in load: raise ValueError('bad key')")
    assert asked(task, "ValueError", raised) is None
    assert asked("Which method raises it?", "ValueError", raised) is not None


def test_an_apostrophe_inside_quoted_text_is_part_of_it() -> None:
    assert quoted_in("Which method raises 'Can't receive data'?") == ["Can't receive data"]
    assert quoted_in("tomllib's load function returns the result of 'another'") == ["another"]


NAMES = st.lists(
    st.lists(st.sampled_from(["skip", "comment", "chars", "py", "scan", "make"]), min_size=1).map(
        "_".join
    ),
    max_size=6,
)


@given(NAMES, st.sampled_from(["skip_chars", "make_scanner", "skip"]))
def test_what_is_offered_covers_all_the_answer_covers_and_more(
    candidates: list[str], answer: str
) -> None:
    wanted = task_words("Which function skips a comment in the python scanner?", [])
    found = fuller(answer, wanted, candidates, frozenset())
    mine = covered(answer, wanted)
    if found is None:
        assert all(not mine < covered(c, wanted) for c in candidates)
    else:
        other, theirs, said = found
        assert other in candidates
        assert said == mine
        assert mine < theirs == covered(other, wanted)
        assert all(
            len(covered(c, wanted)) <= len(theirs) for c in candidates if mine < covered(c, wanted)
        )


def test_only_a_definition_of_the_kind_the_task_asks_for_is_offered() -> None:
    task = "Which class in h11 writes a message body in chunks?"
    hits = (
        "h11/_readers.py:80: class ContentLengthReader:\n"
        "h11/_connection.py:90: def _body_framing(request_method, event):"
    )
    assert asked(task, "ContentLengthReader", ("search", hits)) is None
    writer = hits + "\nh11/_writers.py:70: class ChunkedWriter(BodyWriter):"
    problem = asked(task, "ContentLengthReader", ("search", writer))
    assert problem is not None
    assert "than ChunkedWriter (chunk, writ)" in problem
    function = "Which function writes a message body in chunks?"
    reader = writer + "\nh11/_readers.py:9: def read_all(buf):"
    problem = asked(function, "read_all", ("search", reader))
    assert problem is not None
    assert "than _body_framing (body)" in problem  # ChunkedWriter says more, but is a class
