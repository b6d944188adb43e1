"""Two tasks from one template are siblings whatever the length of the change (issue 48).

Recorded traffic had two variants of one test joined and labelled while the same cassette's
other variants stayed apart: a document placeholder one character shorter (67 -> 66) in the
first user turn read as `content-replaced`, a later step of the other variant as a
`history-rewritten` continuation; the sibling rule's 16-character step decided. Here the
variants differ in their first user turn by 1, 17 and 40 characters, the later one a step
further on, in either order: two conversations, no claim, never depending on which variant
the log holds first."""

from __future__ import annotations

from itertools import permutations
from pathlib import Path
from typing import Any

import pytest

from tests.audit.test_audit_grouping import audited, call, chat, result

DOCUMENT = "Summarise the attached document in two sentences. <document name='{name}'/>"


def variant(name: str, steps: int) -> dict[str, Any]:
    """A request of the task on document `name`, `steps` tool steps in."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": DOCUMENT.format(name=name)}]
    for n in range(1, steps + 1):
        messages += [call(n), result(n, 7 * n)]
    return chat(messages)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("report-q3.txt", "report-q.txt"),  # one character shorter
        ("a.txt", "quarterly-report-2026.txt"),  # 20 characters longer
        ("summary-of-the-board-meeting-minutes-of-june.txt", "notes.txt"),  # 40 shorter
    ],
)
def test_variants_that_differ_in_the_first_turn_are_siblings_in_either_order(
    tmp_path: Path, first: str, second: str
) -> None:
    bodies = [variant(first, 0), variant(second, 2)]
    for order in permutations(bodies):
        report = audited(tmp_path, list(order))
        assert [len(c.findings) for c in report.conversations] == [1, 1]
        assert [f.cause_kind for c in report.conversations for f in c.findings] == [None, None]


def test_a_variants_own_steps_still_continue_it(tmp_path: Path) -> None:
    """The rule splits variants, not a conversation: each variant's steps stay one line."""
    bodies = [variant("a.txt", 0), variant("b-longer-name.txt", 0)]
    bodies += [variant("a.txt", 1), variant("b-longer-name.txt", 1)]
    report = audited(tmp_path, bodies)
    assert [[f.line for f in c.findings] for c in report.conversations] == [[1, 3], [2, 4]]
