"""What a run's tool results showed of the files, read by the answer check (`grounding.py`).

Each workspace tool's output is read in its own shape: a search or find_definition line
`path:line in NAME: text` is a hit; read_file's `  12 | text` a line of the file without its
number (a read line that looks like a hit is a line of the file); a listing's and the map's
lines are paths and definition headers. What is not the files is left out: a "no matches"
line (it only echoes the pattern), a tool's own notes (`[not searched: ... too big ...]`), the
closest names offered beside a failed search (a lead to a search, not to an answer). What is
kept: the text, case-folded and as spelled, each result's hits, and each definition seen with
the file it was seen in. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from warmloop.workspace.code_map import DOC_MARK
from warmloop.workspace.follow import NOT_DEFINED
from warmloop.workspace.nearby import DEFINITION
from warmloop.workspace.nearby import NOTE as NEARBY_NOTE

HIT = re.compile(r"^(?P<path>\S.*?):(?P<line>\d+)(?: in (?P<within>[\w$.]+))?: (?P<text>.*)$")
"""A search hit (or a closest line): `path:line: text`, or `path:line in NAME: text` for a
line inside the definition NAME (`outline`)."""
NUMBERED = re.compile(r"^\s*\d+ \| (?P<text>.*)$")
"""A line read_file shows: `  12 | text`."""
READ_HEAD = re.compile(r"^(?P<path>\S.*?): lines \d+-\d+ of \d+(?:, in (?P<within>[\w$.]+))?$")
ECHOES = (
    "no matches for ",
    NEARBY_NOTE,
    "[the lines around a match: ",
    NOT_DEFINED,
)
"""Lines that repeat the model's own pattern or the tool's own words, not the files."""
READ_FILE, SEARCH, LIST_FILES, FIND_DEFINITION = (
    "read_file",
    "search",
    "list_files",
    "find_definition",
)
MAP = "the workspace map"
"""The map in the run's instructions (`code_map`), read as what the tools would show: its
files, and its definitions' headers as their files spell them."""
WORKSPACE_TOOLS = frozenset({READ_FILE, SEARCH, LIST_FILES, FIND_DEFINITION})
BASES = "  bases: "
"""find_definition's line of a class's bases (`ProtocolError, defined at h11/_util.py:12`):
each is a class the run has seen, as a header's bases are."""
NO_FILES = "(no files under "
NAMES = "closest names: "
QUOTES = str.maketrans({"'": '"', "`": '"', "\u2018": '"', "\u2019": '"', "\u201c": '"'})
SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Hit:
    """A line of a file the run has seen by a search: where, and what it says."""

    path: str
    line: int
    text: str
    within: str | None = None
    """The definition the line is in, as the hit names it."""


@dataclass(frozen=True)
class Seen:
    """What the run's tool results showed of the files: `text` normalised (case-folded),
    `exact` with its case kept, the search hits of each result, the names of the
    definitions seen (a `def`/`class` line read or hit, or the definition a line is in) and
    the paths of the files hit or read."""

    text: str
    exact: str
    hits: list[list[Hit]]
    defined: frozenset[str]
    paths: frozenset[str] = frozenset()
    places: frozenset[tuple[str, str]] = frozenset()
    """Each definition seen, with the file it was seen defined in: (name, path)."""
    looked: frozenset[str] = frozenset()
    """The definitions whose own lines the run has read (read_file) or looked up
    (find_definition): what it knows of them is more than their name."""


def normal(text: str) -> str:
    """`text` case-folded, with one kind of quote and single spaces."""
    return SPACE.sub(" ", text.translate(QUOTES)).strip().casefold()


def seen_text(observations: Sequence[tuple[str, str]]) -> Seen:
    """What the observations (each a tool's name and what it returned) show of the files,
    one line each, without line numbers or the tools' own notes, and each observation's
    search hits, in order. Each workspace tool's output is read in its own shape: a read
    line that looks like a hit (`1 | key:5: value`) is a line of the file."""
    lines: list[str] = []
    hits: list[list[Hit]] = []
    places: set[tuple[str, str]] = set()
    paths: set[str] = set()
    looked: set[str] = set()
    for tool, observation in observations:
        hits.append([])
        where = ""  # the file the lines read now are of
        for line in observation.split("\n"):
            if line.startswith(ECHOES):
                continue
            shown = file_text(tool, line)
            if shown is not None:
                lines += shown
                if tool == READ_FILE and (head := READ_HEAD.match(line)) is not None:
                    where = head["path"]
                if tool == MAP and not line.startswith(" ") and shown:
                    where = shown[0]  # a file's line: its path
                paths.update(filter(None, [where]))
                found = _defines(tool, line, shown)
                places.update((name, where) for name in found)
                looked.update(found if tool == READ_FILE else ())
            elif (hit := HIT.match(line)) is not None:
                hits[-1].append(Hit(hit["path"], int(hit["line"]), hit["text"], hit["within"]))
                paths.add(hit["path"])
                lines += [hit["path"], hit["text"], *filter(None, [hit["within"]])]
                found = _defines(tool, line, [hit["text"]], hit["within"])
                places.update((name, hit["path"]) for name in found)
                if tool == FIND_DEFINITION and (header := DEFINITION.match(hit["text"])):
                    looked.add(header[1] or header[2])
    exact = "\n".join(SPACE.sub(" ", line.translate(QUOTES)).strip() for line in lines)
    defined = frozenset(name for name, _ in places)
    return Seen(
        exact.casefold(),
        exact,
        hits,
        defined,
        frozenset(paths),
        frozenset(places),
        frozenset(looked),
    )


def _defines(tool: str, line: str, texts: list[str], within: str | None = None) -> list[str]:
    """The names `line` of `tool`'s output shows defined: a definition line's name, the
    definition a hit or a read is in, each qualified name with its last part too."""
    if tool == READ_FILE and (head := READ_HEAD.match(line)) is not None:
        within = head["within"]
    names = [within] if within else []
    if tool in (READ_FILE, SEARCH):
        names += [m[1] or m[2] for text in texts if (m := DEFINITION.match(text)) is not None]
    if tool == FIND_DEFINITION and line.startswith(BASES):
        names += [b.split(",")[0].strip().rsplit(".", 1)[-1] for b in line[len(BASES) :].split(";")]
    if tool == MAP:  # `def order_total(...)  # its docstring`: the header defines the name
        headers = [text.split(DOC_MARK.strip(), 1)[0] for text in texts]
        names += [m[1] or m[2] for text in headers if (m := DEFINITION.match(text)) is not None]
    return [part for name in names for part in (name, name.rsplit(".", 1)[-1])]


def file_text(tool: str, line: str) -> list[str] | None:
    """What `line` of `tool`'s output shows of the files, when it is not a search hit: []
    for the tool's own words (a note, a count), None for a line shaped as a hit."""
    if tool == READ_FILE:
        if (numbered := NUMBERED.match(line)) is not None:
            return [numbered["text"]]
        head = READ_HEAD.match(line)
        return [] if head is None else [head["path"], *filter(None, [head["within"]])]
    if (tool in WORKSPACE_TOOLS and is_note(line)) or (tool == MAP and is_note(line.strip())):
        return []
    if tool in (LIST_FILES, MAP):
        return [line.strip()]
    if tool in (SEARCH, FIND_DEFINITION) and line.startswith(NAMES):
        return []  # names picked from lines near a failed search: leads to search, not to submit
    return None if HIT.match(line) is not None else [line]


def is_note(line: str) -> bool:
    """A workspace tool's own words about its output (`[not searched: 2 file(s) too big
    ...]`, `(no files under x)`), not a line of a file."""
    return (line.startswith("[") and line.endswith("]")) or line.startswith(NO_FILES)


def written(value: str, text: str) -> bool:
    """Whether normalised `value` is in `text`, whole-word at its ends (`1.0` is not in
    `11.05`, `utf-8` is in `'utf-8'`)."""
    before = r"(?<![\w.])" if re.match(r"\w", value) else ""
    after = r"(?![\w])(?!\.\d)" if re.search(r"\w$", value) else ""
    return re.search(before + re.escape(value) + after, text) is not None
