"""What a later request keeps of an earlier one (the measure behind grouping), on random
conversation parts: appending keeps everything, inserting text before the end of a message
keeps everything (the tail is found again after the new text), and dropping a message keeps
everything but it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from warmloop.exchange.continuation import (
    continuation,
    longest_prefix_within,
    longest_suffix_within,
)

items = st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=8)


@given(items, st.lists(st.text(max_size=40), max_size=4))
def test_appending_keeps_everything(earlier: list[str], added: list[str]) -> None:
    found = continuation(earlier, [*earlier, *added])
    assert found.extends
    assert found.kept == found.size == sum(map(len, earlier))
    assert found.lost == 0


@given(items, st.data())
def test_text_inserted_before_the_end_of_a_message_keeps_everything(
    earlier: list[str], data: st.DataObject
) -> None:
    last = earlier[-1]
    cut = data.draw(st.integers(0, len(last) - 1))
    inserted = data.draw(st.text(min_size=1, max_size=60))
    later = [*earlier[:-1], last[:cut] + inserted + last[cut:]]
    found = continuation(earlier, later)
    assert found.kept == found.size
    assert found.grown == len(inserted)


@given(items, st.data())
def test_a_dropped_message_is_all_that_is_lost(earlier: list[str], data: st.DataObject) -> None:
    dropped = data.draw(st.integers(0, len(earlier) - 1))
    later = earlier[:dropped] + earlier[dropped + 1 :]
    assert continuation(earlier, later).lost <= len(earlier[dropped])


@given(st.text(max_size=30), st.text(max_size=30))
def test_the_suffix_found_is_the_longest(tail: str, text: str) -> None:
    length = longest_suffix_within(tail, text)
    assert tail[len(tail) - length :] in text
    assert length == len(tail) or tail[len(tail) - length - 1 :] not in text


def test_a_digit_inserted_before_a_number_is_kept_whole_not_read_past_as_a_changed_value() -> None:
    """`10` after `0` is an insertion that keeps everything, though `0` and `10` read as two
    counters: the reading that keeps more wins (issue 46)."""
    found = continuation(['{"content":"0"},'], ['{"content":"10"},'])
    assert found.kept == found.size


def test_a_counter_written_first_is_read_past_and_the_rest_kept() -> None:
    """A loop that writes its iteration number first and grows its history after it: the
    number is read past, the history kept, so the later request carries the earlier on."""
    earlier = ['{"content":"Iteration 3. Task: fix the parser. History: read a.py"},']
    later = [
        '{"content":"Iteration 4. Task: fix the parser. History: read a.py, '
        'then b.py and c.py, both fixed"},'
    ]
    found = continuation(earlier, later)
    assert found.lost == 1  # the counter's one digit
    assert found.continues


@given(st.text(max_size=30), st.text(max_size=30))
def test_the_prefix_found_is_the_longest(head: str, text: str) -> None:
    length = longest_prefix_within(head, text)
    assert head[:length] in text
    assert length == len(head) or head[: length + 1] not in text


TRAJECTORY = "".join(f"[[ ## observation_{n} ## ]]\nline {n} of parser.py\n" for n in range(60))
INSTRUCTION = (
    "Respond with the corresponding output fields, starting with the field `[[ ## {} ## ]]`, "
    "then `[[ ## {} ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."
)


def test_a_rebuilt_prompt_whose_moved_instruction_is_reworded_carries_the_earlier_on() -> None:
    """DSPy's extraction after its loop: the trajectory gains its last step, and the
    instruction after it asks for other fields; its start is found again after the step,
    its end at the end, so only the fields are lost (issue 46)."""
    earlier = [
        f"[[ ## task ## ]]\nReview parser.py\n{TRAJECTORY}\n"
        + INSTRUCTION.format("next_thought", "next_tool_name")
    ]
    step = "[[ ## thought_60 ## ]]\nI should use finish next.\n"
    later = [
        f"[[ ## task ## ]]\nReview parser.py\n{TRAJECTORY}{step}\n"
        + INSTRUCTION.format("reasoning", "answer")
    ]
    found = continuation(earlier, later)
    assert found.reworded > 0
    assert found.continues


def test_two_tasks_of_one_template_with_a_long_shared_start_stay_siblings() -> None:
    """A template whose subject comes after a long shared preamble: the later request
    replaces the name in place, so nothing of the earlier tail's start is found after new
    text, and the two stay apart however little they differ."""
    preamble = f"Conventions:\n{TRAJECTORY}\n"
    earlier = [preamble + "Review the module `alpha_parser` and report its public names."]
    later = [preamble + "Review the module `omega_lexer_tables` and report its public names."]
    found = continuation(earlier, later)
    assert found.reworded == 0
    assert not found.continues
