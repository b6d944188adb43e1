"""Which definition a run has seen names more of what its task asks for.

A small model that asks for a function by a word of the question (`skip`) submits the
first definition its hits show (`skip_chars`), where a neighbour in the same hits names
more of the question (`skip_comment` for "which function skips a comment?",
`py_make_scanner` for "the pure-Python scanner factory", `TimedRotatingFileHandler` for
"rotates its log file at timed intervals"). A definition's name covers a word of the task
when one of its pieces (split at `_` and case, stemmed as the forgiving search reads them:
`nearby.words`) is that word, or is an abbreviation that starts it (`py` for `python`,
`ident` for `identifier`). Only the task's own words count: not its question words, not
the paths or package names it writes (`json` in "which function in the json package": every
name of a package may say it). A neighbour covers more only when it covers every word the
answer covers and another: a name that says other things is no closer. Pure and
deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from warmloop.workspace.nearby import DEFINITION, PIECES, STOP_STEMS, stem, words
from warmloop.workspace.seen import Hit, Seen
from warmloop.workspace.task_words import QUOTED, asked_kind

SHORT_WORDS = frozenset(
    {"an", "as", "at", "be", "by", "do", "if", "in", "is", "it", "no", "of", "on", "or", "so"}
    | {"to", "up", "we", "my", "me", "he", "us"}
)
"""Two-letter pieces that are English words, not abbreviations (`match_to_datetime`'s `to`
does not start `tomllib`)."""
CLASS_LINE = re.compile(r"\s*class\s")
PATH = re.compile(r"[\w.]*[/.][\w./]*")
"""A path or dotted module a task writes (`json/decoder.py`, `zoneinfo._common`)."""


def task_words(task: str, packages: Iterable[str]) -> frozenset[str]:
    """The stemmed words `task` asks about: its words outside quotes, paths and question
    words, without the names of `packages` (the top folders of the files the run saw)."""
    plain = PATH.sub(" ", QUOTED.sub(" ", task))
    left_out = STOP_STEMS | {stem(package) for package in packages}
    return frozenset(word for word in words(plain) if len(word) >= 3 and word not in left_out)


def covered(name: str, wanted: frozenset[str]) -> frozenset[str]:
    """The words of `wanted` that the pieces of the definition `name` say (its last part:
    a method is named by its own name, not its class's)."""
    found: set[str] = set()
    for piece in PIECES.findall(name.rsplit(".", 1)[-1]):
        if len(piece) < 2 or piece.lower() in SHORT_WORDS:
            continue
        stemmed = stem(piece)
        found.update(word for word in wanted if word == stemmed or word.startswith(piece.lower()))
    return frozenset(found)


def hit_definitions(hits: Iterable[Iterable[Hit]], kind: str | None = None) -> list[str]:
    """The definitions the hits show, in order, without repeats: each hit's own `def` or
    `class` line or constant, and the definition a hit is in. Of the `kind` a task asks
    for: "class", those seen on a `class` line; "function", none seen on one."""
    names: list[str] = []
    classes: set[str] = set()
    for hit in (hit for observed in hits for hit in observed):
        defined = DEFINITION.match(hit.text)
        if defined is not None and defined[1] and CLASS_LINE.match(hit.text):
            classes.add(defined[1])
        for name in (defined and (defined[1] or defined[2]), hit.within):
            if name and name not in names:
                names.append(name)
    if kind is None:
        return names
    return [name for name in names if (name.rsplit(".", 1)[-1] in classes) == (kind == "class")]


def fuller(
    answer: str, wanted: frozenset[str], candidates: Iterable[str], given: frozenset[str]
) -> tuple[str, frozenset[str], frozenset[str]] | None:
    """The candidate that covers every word of `wanted` the answer covers and more, with
    what each covers (the candidate's first): the most words, then the fewest pieces that
    cover none (`skip_comment` before `skip_comments_and_array_ws`); None when no candidate
    does. Names the task itself writes (`given`) are where it starts, never offered."""
    mine = covered(answer, wanted)
    best: tuple[int, int, str, frozenset[str]] | None = None
    for candidate in candidates:
        last = candidate.rsplit(".", 1)[-1]
        if last == answer.rsplit(".", 1)[-1] or candidate in given or last in given:
            continue
        theirs = covered(candidate, wanted)
        if not (mine < theirs):
            continue
        idle = len([p for p in PIECES.findall(last) if len(p) > 1]) - len(theirs)
        rank = (-len(theirs), idle, candidate, theirs)
        if best is None or rank[:3] < best[:3]:
            best = rank
    return None if best is None else (best[2], best[3], mine)


def fuller_seen(
    answer: str, task: str, seen: Seen, given: frozenset[str]
) -> tuple[str, frozenset[str], frozenset[str]] | None:
    """`fuller` over the definitions the run's hits show, for the words of `task` less the
    names of the packages the run saw files of; only definitions of the kind it asks for
    (a class for "which class", not one for "which function")."""
    packages = {path.split("/", 1)[0] for path in seen.paths if "/" in path}
    candidates = hit_definitions(seen.hits, asked_kind(task))
    return fuller(answer, task_words(task, packages), candidates, given)
