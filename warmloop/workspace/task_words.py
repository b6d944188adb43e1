"""What a task's own words ask for and name, read by the answer check (`grounding.py`).

A task asks for a function, method or class (its answer is a definition's name) or for a
file (a path). The names and paths it writes outside its quoted text are what it asks
about, so never its answer: "MemoryHandler subclasses a class; what is that class's own
base class?" is not answered by `MemoryHandler`. Quoted text is a message or code to find,
which an answer may repeat (`fromutc` in "Which method raises 'fromutc() requires ...'?").
A line that defines what the task names leads on to a name the task does not write
(`class ServerHandler(SimpleHandler):` to `SimpleHandler`): the next search of a question
that takes two steps. Pure and deterministic.
"""

from __future__ import annotations

import keyword
import re

from warmloop.workspace.nearby import DEFINITION

CODE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
"""A name as code writes it, maybe qualified (`JSONDecoder.raw_decode`)."""
ASKS_FOR_DEFINITION = re.compile(
    r"\b(?:which|what|name of the|name the)\s+(?:\w+\s+)?(?:function|method|class|exception)\b",
    re.I,
)
"""A task that asks for a function, method or class (an exception is a class): its answer
is a definition's name."""
ASKS_FOR_EXCEPTION = re.compile(r"\b(?:which|what)\s+(?:\w+\s+)?exception\b", re.I)
"""A task that asks for an exception: its answer may be one the language defines
(`ValueError`), which no file of the workspace does."""
ASKS_FOR_FILE = re.compile(r"\b(?:which|what)\s+(?:\w+\s+)?(?:file|module)\b", re.I)
"""A task that asks for a file: its answer is a path."""
QUOTED = re.compile(r"(?<!\w)'(?:[^']|(?<=\w)'(?=\w))*'(?!\w)|\"[^\"]*\"|`[^`]*`")
"""Quoted text in a task: a message or code to find, which its answer may repeat (an
apostrophe between letters is part of it: 'Can't receive data')."""
TASK_NAME = re.compile(r"[\w./]*[A-Za-z_][\w./]*")
"""A name or path a task writes (`ServerHandler`, `json/__init__.py`, `load`)."""
DEFINES = re.compile(
    r"\bdefines?\s+(?:the\s+)?(?:(?:class|function|method|constant)\s+)?[`'\"]?"
    r"(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
)
"""What a task asks the definition of (`Headers` in "which file defines the Headers class?")."""
MIN_QUOTED = 4
"""Shorter quoted text (`'/'`) is too common on lines to say which line a task means."""


def exactly(value: str) -> bool:
    """Whether `value` is a name of code whose case is part of it (`parse_value`,
    `JSONDecoder`, `VAT_RATE`), so its case must match the files; a plain word
    (`hinges`, `North`) is matched in any case."""
    return CODE_NAME.fullmatch(value) is not None and re.search(r".[A-Z_0-9]", value) is not None


def asked_kind(task: str) -> str | None:
    """ "class" where `task` asks for a class (an exception is one), "function" where it
    asks for a function or method; None where it asks for neither."""
    asked = ASKS_FOR_DEFINITION.search(task)
    if asked is None:
        return None
    return "function" if asked[0].lower().endswith(("function", "method")) else "class"


def named_in(task: str) -> frozenset[str]:
    """The names and paths `task` itself writes outside its quoted text: what it asks
    about, so never its answer (`MemoryHandler` in "MemoryHandler subclasses a class; what
    is that class's own base class?")."""
    unquoted = QUOTED.sub(" ", task)
    return frozenset(word.strip(".") for word in TASK_NAME.findall(unquoted))


def quoted_in(task: str) -> list[str]:
    """The texts `task` quotes, without their quotes, each at least MIN_QUOTED long: a
    message or code the line it asks about holds ('Unknown level')."""
    found = (quoted[0][1:-1].strip() for quoted in QUOTED.finditer(task))
    return [text for text in found if len(text) >= MIN_QUOTED]


def defined_name(task: str) -> str | None:
    """The name whose definition `task` asks about (`Headers` in "Which file of wsgiref
    defines the Headers class?"); None where it names none (`defines it`)."""
    found = DEFINES.search(QUOTED.sub(" ", task))
    return None if found is None else found["name"]


def first_code_name(task: str) -> str | None:
    """The first name of code `task` writes outside its quotes, not a path
    (`LocalProtocolError` in "LocalProtocolError in h11/_util.py subclasses a class..."):
    what it starts from; None when it writes none."""
    for found in TASK_NAME.finditer(QUOTED.sub(" ", task)):
        name = found[0].strip(".")
        if "/" not in name and not name.endswith(".py") and exactly(name):
            return name
    return None


def led_to(line: str, task: str) -> str | None:
    """The name a line of a file leads to beyond what `task` names: the first name of code
    on it that the task does not write (`JSONEncoder` in `_default_encoder = JSONEncoder(`,
    `SimpleHandler` in `class ServerHandler(SimpleHandler):`), the last part of a dotted
    one, spelled as code is (a capitalised word only on a definition or an import line,
    not in prose); None on a function's `def` line, whose
    body is what it leads to, or where the line names nothing else."""
    if re.match(r"\s*(?:async\s+)?def\s", line):
        return None
    given = named_in(task)
    code = DEFINITION.match(line) is not None or re.match(r"\s*(?:from|import)\s", line)
    for found in CODE_NAME.finditer(line):
        name = found[0]
        last = name.rsplit(".", 1)[-1]
        # `JSONEncoder`, `_tzpath`, or `Headers` on a line of code: not a word of prose
        coded = exactly(last) or last.startswith("_") or (bool(code) and last[:1].isupper())
        if coded and name not in given and last not in given and not keyword.iskeyword(last):
            return last
    return None
