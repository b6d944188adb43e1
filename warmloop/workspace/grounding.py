"""Whether a submitted answer is written in what the run has read of the workspace.

A small model that stops at a search hit submits the line number (`142`), its own words
or the name it searched for instead of the value on the line. What the run has read is
its tool results as `seen.py` reads them (and the map in its opening). A short answer (a
value, a name, a path: at most MAX_CHECKED_WORDS words) must appear in that text,
case-insensitive for a plain word and exact for a name of code (`parse_value`,
`JSONDecoder`), after quotes, backticks and runs of white space are normalised, and
whole-word at the answer's ends. An answer that is exactly a pattern the run searched for
is refused too: it says nothing the files told (unless the task asks for a function, method
or class and the run has seen that name defined: the map named it, the search found its
`def`). Where the task asks for a function, method, class or exception, the answer must be
a definition the run has seen (a `def` line, or the `in NAME` of a hit or a read; for an
exception, also one the language defines), not a file or a line, and a sentence is refused
(that answer is a name: the one the sentence names, if the run has seen it defined, is
offered). An answer that is a place a hit or a read showed (`decoder.py:85`, or a hit line
copied whole, however long) is refused with what to submit instead (`places.py`). An
answer the seen lines contradict is refused with theirs: the definition a hit holding the
task's quoted text is in, the file the run saw the asked name defined in. A definition whose
name says fewer of the task's words than one the hits show beside it, taken without reading
its lines, is refused with that one (`coverage.py`). A refusal names
the read that would show the lines around the best hit (the line the answer is on, where it
is on one). Every submit is checked alike: the agent's step budget ends a run, not a count
of refusals. Pure and deterministic.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from warmloop.messages import AssistantTurn, Message, SystemText, ToolResult, UserText
from warmloop.tools.gateway import SUBMIT
from warmloop.workspace.code_map import map_lines
from warmloop.workspace.coverage import fuller_seen
from warmloop.workspace.nearby import DEFINITION
from warmloop.workspace.places import bare, copied_place, follow_action, read_around
from warmloop.workspace.seen import (
    FIND_DEFINITION,
    MAP,
    QUOTES,
    SEARCH,
    SPACE,
    Hit,
    Seen,
    normal,
    seen_text,
    written,
)
from warmloop.workspace.task_words import (
    ASKS_FOR_DEFINITION,
    ASKS_FOR_EXCEPTION,
    ASKS_FOR_FILE,
    defined_name,
    exactly,
    first_code_name,
    led_to,
    named_in,
    quoted_in,
)

MAX_CHECKED_WORDS = 3
"""Longer answers are sentences: their wording is the model's own, so they are not checked
against the files; but where the task asks for a function, method or class a sentence is
refused, since that answer is a name."""
BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)
"""The exceptions the language defines (`ValueError`): an answer to "which exception" that
no file of the workspace defines, but a `raise` line shows."""

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*")
"""An identifier of two characters or more (not a number): what a search can look up."""


def best_hit(value: str, hits: Sequence[Sequence[Hit]]) -> Hit | None:
    """The hit to read around: the latest whose line number the answer is, else the
    latest that defines the answer (`def value`, `value = ...`), else the latest whose
    line holds the answer (so the read covers the line the name is on), else the first
    hit of the latest observation that had any."""
    found = [hit for observed in reversed(hits) for hit in observed]
    for hit in found:
        if value == str(hit.line):
            return hit
    for hit in found:
        defined = DEFINITION.match(hit.text)
        if defined is not None and normal(defined[1] or defined[2]) == normal(value):
            return hit
    for hit in found:
        if normal(value) and written(normal(value), normal(hit.text)):
            return hit
    return next((observed[0] for observed in reversed(hits) if observed), None)


def searched(messages: Sequence[Message]) -> set[str]:
    """The patterns the run's searches asked for, normalised."""
    patterns = set()
    for message in messages:
        if not isinstance(message, AssistantTurn):
            continue
        for call in message.tool_calls:
            if call.name != SEARCH:
                continue  # only a search's pattern matters: no other call is parsed
            try:
                arguments = json.loads(call.arguments or "{}")
            except (ValueError, RecursionError):  # nested past the parser's depth
                continue
            if isinstance(arguments, dict):
                pattern = arguments.get("pattern")
                if isinstance(pattern, str):
                    patterns.add(normal(bare(pattern)))
    return patterns


def subject_hit(task: str, hits: Sequence[Sequence[Hit]]) -> Hit | None:
    """The latest hit whose line defines a name `task` writes (`class ServerHandler(...)`,
    `_default_encoder = ...`): where what the task asks about is."""
    given = named_in(task)
    for hit in (hit for observed in reversed(hits) for hit in observed):
        defined = DEFINITION.match(hit.text)
        if defined is not None and (defined[1] or defined[2]) in given:
            return hit
    return None


def unread_answer(outputs: BaseModel, messages: Sequence[Message]) -> str | None:
    """None when every short string output is written in what the run's tool results
    showed of the workspace, is not just a pattern it searched for and, where the task
    asks for a function, method or class, is a definition the run has seen; else why not,
    and the read that would show the lines around the best hit. Every answer is checked
    alike (the agent's step budget ends a run, not a count of refusals)."""
    results = [m for m in messages if isinstance(m, ToolResult)]
    opening = next((m.text for m in messages if isinstance(m, SystemText)), "")
    mapped = [(MAP, "\n".join(lines))] if (lines := map_lines(opening)) else []
    seen = seen_text(
        mapped + [(r.name, r.content) for r in results if r.name != SUBMIT and not r.is_error]
    )
    task = next((m.text for m in messages if isinstance(m, UserText)), "")
    definition = ASKS_FOR_DEFINITION.search(task) is not None
    run = _Run(seen, searched(messages), task, definition, FIND_DEFINITION in opening)
    for name, value in outputs.model_dump().items():
        if not isinstance(value, str):
            continue
        found = _unread(name, value, run)
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class _Run:
    """What an answer is checked against: what the run's tool results showed, the
    patterns it searched for, its task, and whether the task asks for a definition."""

    seen: Seen
    patterns: set[str]
    task: str
    definition: bool
    follows: bool = False
    """Whether the run can follow a name with find_definition (its instructions name it):
    a refusal then offers that call where it would offer a search for a name."""


def _unread(name: str, value: str, run: _Run) -> str | None:
    """Why the output `name` is refused, and what to do instead; None when it is not (or
    it is too long to be a value copied from the files)."""
    seen, task = run.seen, run.task
    if (place := copied_place(name, value, seen, task, run.follows)) is not None:
        return place
    answer = normal(bare(value))
    if not answer:
        return None
    shown = json.dumps(bare(value), ensure_ascii=False)
    if len(answer.split(" ")) > MAX_CHECKED_WORDS:
        return _not_a_name(f"{name} {shown}", name, value, run) if run.definition else None
    spelled = SPACE.sub(" ", bare(value).translate(QUOTES)).strip()
    hit = best_hit(bare(value), seen.hits)
    if (given := spelled.removesuffix("()")) in named_in(task):
        return _named_in_task(f"{name} {shown}", given, hit, run)
    if answer in run.patterns and not (run.definition and given in seen.defined):
        return _read_first(
            f"Not accepted yet: {name} {shown} is what this run searched for, not a "
            "value the files gave.",
            hit,
        )
    if not (written(spelled, seen.exact) if exactly(spelled) else written(answer, seen.text)):
        problem = (
            f"Not accepted yet: {name} {shown} is not written in any file line this run "
            "has seen (a line number, another spelling or your own words are not a value "
            "from the files)."
        )
        if NAME.fullmatch(bare(value)):  # a name the model knows may be there: look
            search = json.dumps({"tool": "search", "arguments": {"pattern": bare(value)}})
            return f"{problem} If it is a name in the files, search for it first: {search}."
        return _read_first(problem, hit)
    if run.definition and not {spelled.removesuffix("()"), spelled.rsplit(".", 1)[-1]} & (
        seen.defined | (BUILTIN_EXCEPTIONS if ASKS_FOR_EXCEPTION.search(task) else set())
    ):
        return _read_first(
            f"Not accepted yet: the task asks for a function, method or class, and {name} "
            f"{shown} is not one this run has seen defined (a file or a line is where it "
            "is, not its name). A search hit inside a definition names it: "
            "`path:line in NAME: text`.",
            hit,
        )
    if ASKS_FOR_FILE.search(task) and NAME.fullmatch(spelled):
        action = follow_action(spelled, run.follows)
        verb = "Look it up" if run.follows else "Search for it"
        return (
            f"Not accepted yet: the task asks for a file, and {name} {shown} is a name, "
            f"not a file. {verb} to see the file that defines it: {action}."
        )
    return _contradicted(name, spelled, run) or _fuller_seen(name, spelled, run)


def _contradicted(name: str, spelled: str, run: _Run) -> str | None:
    """Why an answer is refused that the lines the run has seen contradict, with the one
    they give instead: where the task asks for a function, method or class and quotes what
    its line holds, the definitions the hits holding that text are in; where it asks for
    the file that defines a name, the files the run saw that name defined in. None where
    the run has seen no such line (the answer may be right: nothing says otherwise)."""
    shown = f"{name} {json.dumps(spelled, ensure_ascii=False)}"
    if run.definition:
        holding = [hit for hit in raising(run.task, run.seen.hits) if hit.within]
        within = list(dict.fromkeys(hit.within for hit in holding if hit.within))
        if holding and not any(_names(spelled, enclosing) for enclosing in within):
            hit = holding[0]
            submit = {"tool": SUBMIT, "arguments": {name: within[0]}}
            return (
                f"Not accepted yet: {shown} is not where the task's quoted text is: the line "
                f"`{hit.path}:{hit.line}: {hit.text.strip()}` holds it, in {within[0]}. "
                f"If that is the line the task means, submit its name alone: {json.dumps(submit)}."
            )
    asked = defined_name(run.task)
    if asked is None or not ASKS_FOR_FILE.search(run.task):
        return None
    files = sorted({path for defined, path in run.seen.places if defined == asked and path})
    if not files or any(_same_file(spelled, path) for path in files):
        return None
    submit = {"tool": SUBMIT, "arguments": {name: files[0]}}
    return (
        f"Not accepted yet: the task asks for the file that defines {asked}, and this run saw "
        f"{asked} defined in {', '.join(files)}, not in {shown}. Submit the file that "
        f"defines it: {json.dumps(submit)}."
    )


def _fuller_seen(name: str, spelled: str, run: _Run) -> str | None:
    """Why a definition is refused where another the run's hits show names more of the
    task's words (`coverage.fuller_seen`) and the run has not read the answer's own lines;
    None where none does, or where the run has read them (what it chose, it chose knowing).
    A task that quotes a line's text asks where that text is: `_contradicted` reads it."""
    answer = spelled.removesuffix("()")
    if not run.definition or answer in run.seen.looked or quoted_in(run.task):
        return None
    found = fuller_seen(answer, run.task, run.seen, named_in(run.task))
    if found is None:
        return None
    other, theirs, mine = found
    submit = {"tool": SUBMIT, "arguments": {name: other.rsplit(".", 1)[-1]}}
    hit = best_hit(answer, run.seen.hits)
    look = (
        json.dumps({"tool": "read_file", "arguments": read_around(hit.path, hit.line)})
        if hit is not None
        else follow_action(answer, run.follows)
    )
    return (
        f"Not accepted yet: {name} {json.dumps(answer)} names fewer of the task's words "
        f"({', '.join(sorted(mine)) or 'none of them'}) than {other} "
        f"({', '.join(sorted(theirs))}), which this run has also seen defined. If {other} is "
        f"what the task asks for, submit it: {json.dumps(submit)}. If {answer} is, read its "
        f"lines first: {look}."
    )


def raising(task: str, hits: Sequence[Sequence[Hit]]) -> list[Hit]:
    """The hits whose line holds a text `task` quotes ('Unknown level'), latest first."""
    quoted = [normal(text) for text in quoted_in(task)]
    found = (hit for observed in reversed(hits) for hit in observed)
    return [hit for hit in found if any(text in normal(hit.text) for text in quoted)]


def _names(answer: str, enclosing: str) -> bool:
    """Whether `answer` names the definition `enclosing` (`Manager.getLogger`): as a whole
    or by any of its parts (the method, or the class it is in)."""
    name = answer.removesuffix("()")
    return name == enclosing or name in enclosing.split(".") or name.endswith("." + enclosing)


def _same_file(answer: str, path: str) -> bool:
    """Whether `answer` is the file `path` (maybe without its leading folders)."""
    return answer == path or path.endswith("/" + answer)


def _not_a_name(output: str, name: str, value: str, run: _Run) -> str:
    """Why a sentence is refused where the task asks for a function, method or class
    (`output`: the output's name and value): such an answer is a definition's name alone.
    A definition the run has seen that the sentence names (not one the task names) is
    offered as the answer; else the read around the best hit."""
    problem = (
        f"Not accepted yet: the task asks for a function, method or class, and {output} "
        "is a sentence, not its name."
    )
    given = named_in(run.task)
    named = [
        word
        for word in dict.fromkeys(NAME.findall(value))
        if word in run.seen.defined and word not in given
    ]
    if named:
        submit = {"tool": SUBMIT, "arguments": {name: named[0]}}
        return f"{problem} If it is {named[0]}, submit its name alone: {json.dumps(submit)}."
    return _read_first(
        f"{problem} A search hit inside a definition names it: `path:line in NAME: text`.",
        best_hit(bare(value), run.seen.hits),
    )


def _named_in_task(output: str, given: str, hit: Hit | None, run: _Run) -> str:
    """Why an answer the task itself names (`given`) is refused (`output`: the output's
    name and value): the line defining it, and the name that line leads to, are where to
    look; where the run can follow a name and has not seen that line, the call that
    shows it."""
    problem = (
        f"Not accepted yet: {output} is named in the task itself: it is where "
        "to start, not the answer."
    )
    hit = subject_hit(run.task, run.seen.hits) or hit
    if hit is not None and (next_name := led_to(hit.text, run.task)) is not None:
        action = follow_action(next_name, run.follows)
        verb = "look it up" if run.follows else "search for it"
        return (
            f"{problem} Its line `{hit.text}` names {next_name}: submit that if the "
            f"task asks for it, else {verb} next: {action}."
        )
    subject = given if NAME.fullmatch(given) else first_code_name(run.task)
    if run.follows and subject is not None:
        return f"{problem} Look up what it leads to: {follow_action(subject, True)}."
    return _read_first(problem, hit)


def _read_first(problem: str, hit: Hit | None) -> str:
    """`problem`, and the read that shows the lines around `hit` (a search without one)."""
    if hit is None:
        return f"{problem} Search the files for one word of the task first."
    read = read_around(hit.path, hit.line)
    action = json.dumps({"tool": "read_file", "arguments": read}, ensure_ascii=False)
    return (
        f"{problem} Read the lines around the match first: {action}, then submit the "
        "exact value written there."
    )
