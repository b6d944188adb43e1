"""A map of the workspace for the top of the prompt: its files and what each defines, ranked.

A model that has never seen a codebase first needs to know what is in it: Aider puts a
ranked map of a repository's definitions in its prompt, and warmloop puts one in the
opening, the part of the prompt every question of a workspace shares, so the engine keeps
it in its KV cache and a saved opening carries it across processes. The map lists every
file, and under each its classes, functions and module constants with their headers as
the file spells them (`def order_total(stock: Stock, lines: list[OrderLine]) -> float`,
`VAT_RATE = 0.21`), each docstring's first line as a comment and each class's methods by
name. It has no line numbers, so an edit inside a body leaves it (and the saved opening)
as it was; `find_definition` gives the line.

What does not fit the budget is left out by rank, lowest first: the methods of a class,
then docstrings, then private and dunder names, then names no other file uses; files and
public top-level names go last. Ties keep path and line order, so the same workspace
always gives the same map, byte for byte (the opening's tokens, and its saved state, are
the same). Pure and deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.workspace.code_index import CodeIndex, SourceFile
from warmloop.workspace.definitions import (
    CLASS,
    CONSTANT,
    FUNCTION,
    METHOD,
    SETTING_KIND,
    Definition,
    one_line,
)

MAP_HEADER = "Workspace map: every file, and the classes, functions and constants its code defines:"
"""The map's first line; the map runs to the first blank line after it (`map_lines`)."""
CHARS_PER_TOKEN = 3
"""A conservative estimate (code spends more tokens per character than prose)."""
DEFAULT_MAP_TOKENS = 1024
MAX_SUMMARY_CHARS = 72
MAX_METHODS = 12
DOC_MARK = "  # "
METHODS_MARK = "methods: "
USED_BONUS = 4
"""Rank a name gains for each file that imports it (at most MAX_USED_BONUS)."""
MAX_USED_BONUS = 20
KIND_RANK = {CLASS: 60, FUNCTION: 55, CONSTANT: 50, SETTING_KIND: 50}
LISTS_OF_NAMES = frozenset({"__all__", "__slots__"})
"""Dunder names whose values repeat names the map shows anyway."""
FILE_RANK = 1000.0
SUMMARY_COST = 30
METHODS_COST = 35
"""How much less a definition's docstring line and its methods rank than the definition."""
SECTION, DEFINED, SUMMARY, METHODS = 0, 1, 2, 3
"""The order of a definition's lines in the map, the third part of an entry's place."""


@dataclass(frozen=True)
class Entry:
    """One line the map may hold: its text, its rank, its place (path, line, order) and
    the entry it stands under (a definition's file line, a docstring's definition)."""

    text: str
    rank: float
    place: tuple[str, int, int]
    parent: tuple[str, int, int] | None = None


@dataclass(frozen=True)
class WorkspaceMap:
    """The map's text and what it holds of the index: definitions shown and in all."""

    text: str
    shown: int
    total: int
    files: int
    lines: int

    @property
    def tokens(self) -> int:
        """The map's size in tokens, estimated (`CHARS_PER_TOKEN`)."""
        return -(-len(self.text) // CHARS_PER_TOKEN)


def workspace_map(index: CodeIndex, budget_tokens: int = DEFAULT_MAP_TOKENS) -> WorkspaceMap:
    """The map of `index` in at most `budget_tokens` (estimated) tokens."""
    used = _users(index)
    entries = [entry for file in index.files for entry in _entries(file, used)]
    total = sum(1 for e in entries if e.place[2] == DEFINED)
    room = map_room(budget_tokens)
    if sum(len(e.text) + 1 for e in entries) > room:
        room -= len(_note(total, total)) + 1  # room to say what was left out
    chosen: dict[tuple[str, int, int], Entry] = {}
    for entry in sorted(entries, key=lambda e: (-e.rank, e.place)):
        cost = len(entry.text) + 1
        if cost <= room and (entry.parent is None or entry.parent in chosen):
            chosen[entry.place] = entry
            room -= cost
    shown = sum(1 for place in chosen if place[2] == DEFINED)
    lines = [MAP_HEADER]
    for place in sorted(chosen):
        if place[2] == SUMMARY:  # a docstring's first line ends its definition's line
            lines[-1] += chosen[place].text
        else:
            lines.append(chosen[place].text)
    if len(chosen) < len(entries):
        lines.append(_note(shown, total))
    return WorkspaceMap("\n".join(lines), shown, total, len(index.files), index.lines)


def map_room(budget_tokens: int) -> int:
    """The characters a map's lines may take in a budget of `budget_tokens` tokens."""
    return max(0, budget_tokens) * CHARS_PER_TOKEN - len(MAP_HEADER) - 1


def _note(shown: int, total: int) -> str:
    return f"[the map shows {shown} of {total} top-level definitions; search finds the rest]"


def _users(index: CodeIndex) -> dict[str, int]:
    """For each name, how many files import it (`from .stock import Stock` counts for
    `Stock`): what the rest of the workspace is built on ranks first."""
    counts: dict[str, int] = {}
    for file in index.files:
        for name in {i.original or i.module.rsplit(".", 1)[-1] for i in file.parsed.imports}:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _rank(definition: Definition, used: dict[str, int]) -> float:
    """How much a top-level name is worth its room: its kind, less for a private or dunder
    name, more for each other file that uses it."""
    name = definition.short
    rank = float(KIND_RANK.get(definition.kind, 40))
    if name in LISTS_OF_NAMES:
        rank -= 30
    elif name.startswith("__") and name.endswith("__"):
        rank -= 10  # module metadata: `__version__`, `__author__`
    elif name.startswith("_"):
        rank -= 20
    elif definition.kind == CONSTANT and not name.isupper():
        rank -= 15  # a module variable (`field_name = token`), not a named constant
    return rank + min(MAX_USED_BONUS, USED_BONUS * used.get(name, 0))


def _entries(file: SourceFile, used: dict[str, int]) -> list[Entry]:
    """The lines `file` may add to the map: its path, then per top-level definition its
    header, its docstring's first line and (a class) its methods; a setting under the
    section it is in."""
    head = (file.path, 0, 0)
    # A file nearer the root first, where the files alone are more than fit.
    entries = [Entry(file.path, FILE_RANK - file.path.count("/"), head)]
    definitions = file.parsed.definitions
    section: tuple[str, tuple[str, int, int]] = ("", head)
    last = {d.name: d.line for d in definitions}  # an overloaded name: its implementation
    for definition in definitions:
        if last[definition.name] != definition.line:
            continue
        place = (file.path, definition.line, DEFINED)
        rank = _rank(definition, used)
        if definition.kind == SETTING_KIND:
            group = definition.name.rsplit(".", 1)[0] if "." in definition.name else ""
            if group and group != section[0]:  # the section line a setting is read under
                section = (group, (file.path, definition.line, SECTION))
                entries.append(Entry(f"  [{group}]", rank + 1, section[1], head))
            entries.append(Entry(f"  {definition.header}", rank, place, section[1]))
        elif definition.top_level:
            entries.append(Entry(f"  {definition.header}", rank, place, head))
            entries += _details(file.path, definition, definitions, rank)
    return entries


def _details(
    path: str, definition: Definition, definitions: tuple[Definition, ...], rank: float
) -> list[Entry]:
    """A top-level definition's docstring line and, for a class, its methods' names."""
    place = (path, definition.line, DEFINED)
    found = []
    summary = one_line(definition.summary, MAX_SUMMARY_CHARS)
    if summary:
        where = (path, definition.line, SUMMARY)
        found.append(Entry(f"{DOC_MARK}{summary}", rank - SUMMARY_COST, where, place))
    if definition.kind == CLASS:
        prefix = f"{definition.name}."
        methods = [
            d.short
            for d in definitions
            if d.kind == METHOD and d.name == prefix + d.short and not d.short.startswith("__")
        ]
        if methods:
            more = ", …" if len(methods) > MAX_METHODS else ""
            text = f"    {METHODS_MARK}{', '.join(methods[:MAX_METHODS])}{more}"
            where = (path, definition.line, METHODS)
            found.append(Entry(text, rank - METHODS_COST, where, place))
    return found


def map_lines(text: str) -> list[str]:
    """The lines of the map inside `text` (a prompt that holds one), without its header;
    [] when it holds none."""
    start = text.find(MAP_HEADER + "\n")
    if start < 0:
        return []
    body = text[start + len(MAP_HEADER) + 1 :]
    end = body.find("\n\n")
    return (body if end < 0 else body[:end]).split("\n")
