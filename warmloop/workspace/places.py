"""An answer that says where a line is (`decoder.py:85`), not what the line holds.

A small model that stops at a search hit submits the hit's place, or the hit copied whole
(`decoder.py:85 in py_scanstring: raise ...`). Such an answer is refused with what to
submit instead: the definition the line is in where the task asks for a function or class,
the file where it asks for a file, the name the line leads to where the task names that
file itself, else the read that shows the value on the line. Read by the answer check
(`grounding.py`). Pure and deterministic.
"""

from __future__ import annotations

import json
import re

from warmloop.tools.gateway import SUBMIT
from warmloop.workspace.seen import FIND_DEFINITION, SEARCH, Seen
from warmloop.workspace.task_words import ASKS_FOR_DEFINITION, ASKS_FOR_FILE, led_to, named_in

LINES_BEFORE = 2
LINES_AFTER = 10
"""The read around a hit: a few lines before it, the body after it."""


PLACE = re.compile(
    r"^(?P<path>[^\s:]+):(?P<line>\d+)(?: in (?P<within>[\w$.]+))?(?::(?P<text>.*))?$", re.S
)
"""An answer that says where a line is (`decoder.py:85`), maybe copied whole from a hit
(`decoder.py:85 in py_scanstring: raise ...`): a place, not the value a task asks for."""


def bare(answer: str) -> str:
    """The value an answer holds: without surrounding white space, quotes, backticks or a
    final full stop."""
    value = answer.strip().removesuffix(".").strip()
    while len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        value = value[1:-1].strip()
    return value


def read_around(path: str, line: int) -> dict[str, str | int]:
    """read_file's arguments that show the lines around `line` of `path`."""
    return {
        "path": path,
        "start_line": max(1, line - LINES_BEFORE),
        "end_line": line + LINES_AFTER,
    }


def follow_action(name: str, follows: bool) -> str:
    """The call that leads on from `name`: find_definition where the run has it (it says
    where the name is defined and what it is), else a search for it."""
    if follows:
        return json.dumps({"tool": FIND_DEFINITION, "arguments": {"name": name}})
    return json.dumps({"tool": SEARCH, "arguments": {"pattern": name}})


def copied_place(name: str, value: str, seen: Seen, task: str, follows: bool = False) -> str | None:
    """Why `value` is refused when it is a place a hit or a read showed (`path:line`, maybe
    copied with the hit's `in NAME` and text), with what to submit instead: the definition
    the line is in where `task` asks for a function or class, the path where it asks for a
    file, else the value on the line, after reading it. None when it is not such a place."""
    place = PLACE.match(bare(value))
    if place is None or place["path"] not in seen.paths:
        return None
    path, line = place["path"], int(place["line"])
    found = [
        hit for observed in seen.hits for hit in observed if (hit.path, hit.line) == (path, line)
    ]
    within = place["within"] or next((hit.within for hit in found if hit.within), None)
    copied = "a search hit copied whole" if place["text"] is not None else "a file and a line"
    problem = (
        f"Not accepted yet: {name} {json.dumps(bare(value), ensure_ascii=False)} is {copied}: "
        "where a line is, not the answer."
    )
    if ASKS_FOR_DEFINITION.search(task) and within:
        submit = {"tool": SUBMIT, "arguments": {name: within}}
        return f"{problem} The line is in {within}; submit its name alone: {json.dumps(submit)}."
    given = named_in(task)
    if ASKS_FOR_FILE.search(task) and path not in given:
        submit = {"tool": SUBMIT, "arguments": {name: path}}
        return f"{problem} Submit the file alone: {json.dumps(submit)}."
    text = place["text"] or next((hit.text for hit in found), "")
    if ASKS_FOR_FILE.search(task) and (next_name := led_to(text, task)) is not None:
        verb = "look it up" if follows else "search for it"
        return (
            f"{problem} The task names {path} itself; the line names {next_name}: {verb} "
            f"next: {follow_action(next_name, follows)}."
        )
    read = {"tool": "read_file", "arguments": read_around(path, line)}
    return (
        f"{problem} Read the line first: {json.dumps(read, ensure_ascii=False)}, then submit "
        "only the value the task asks for, as written there."
    )
