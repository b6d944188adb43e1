"""The held-out eval: enough questions over enough codebases, each answer really there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.heldout import PACKAGES, QUESTIONS, UNSEEN, UNSEEN_PACKAGES, prepare
from benchmarks.local_eval import QUESTIONS as EXAMPLE_QUESTIONS
from warmloop.protocols.react_text import EXAMPLES


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return prepare(tmp_path_factory.mktemp("eval"))


def test_sixty_questions_of_every_kind_over_five_codebases() -> None:
    assert len(QUESTIONS) >= 60
    assert {q.codebase for q in QUESTIONS} == set(PACKAGES)
    assert len(PACKAGES) >= 5
    assert {q.kind for q in QUESTIONS} == {q.kind for q in EXAMPLE_QUESTIONS}


def test_forty_unseen_questions_of_every_kind_over_two_new_codebases() -> None:
    assert len(UNSEEN) >= 40
    assert {q.codebase for q in UNSEEN} == set(UNSEEN_PACKAGES)
    assert not set(UNSEEN_PACKAGES) & set(PACKAGES)
    assert {q.kind for q in UNSEEN} == {q.kind for q in EXAMPLE_QUESTIONS}
    assert not {q.task for q in UNSEEN} & {q.task for q in QUESTIONS}


def test_every_answer_is_in_its_codebase_as_text_or_a_path(workspaces: dict[str, Path]) -> None:
    for question in QUESTIONS + UNSEEN:
        root = workspaces[question.codebase]
        files = sorted(p for p in root.rglob("*.py"))
        texts = [p.read_text(encoding="utf-8") for p in files]
        paths = [str(p.relative_to(root)) for p in files]
        accept = re.compile(question.accept, re.IGNORECASE)
        assert any(accept.search(t) for t in texts + paths), question.task


def test_no_worked_example_asks_a_held_out_question() -> None:
    taught = {e.task.lower() for e in EXAMPLES}
    words = {w for task in taught for w in re.findall(r"[a-z_]{4,}", task)}
    for question in QUESTIONS + UNSEEN:
        assert question.task.lower() not in taught
        # No identifier a held-out question is about appears in a worked example.
        named = set(re.findall(r"\b[a-z]+_[a-z_]+\b", question.task.lower()))
        assert not named & words, question.task


def test_workspaces_are_copies_without_bytecode(workspaces: dict[str, Path]) -> None:
    assert (workspaces["json"] / "json" / "decoder.py").is_file()
    assert not list(workspaces["tomllib"].rglob("__pycache__"))
    assert (workspaces["h11"] / "h11" / "_connection.py").is_file()  # from site-packages
    assert prepare(workspaces["json"].parent.parent) == workspaces  # copied once
