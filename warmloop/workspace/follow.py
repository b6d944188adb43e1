"""Follow a name: where the workspace defines it and what it is, naming the next step.

Editors answer "where is this defined" with go-to-definition; a small model asked which
file defines the class another class subclasses needs the same: one call per step, each
naming the next. `find_definition` answers a name (`Stock`, `Stock.remove`,
`inventory.stock.Stock`, a module's name) with each place that defines it, as a search hit
(`path:line: header`, `path:line in Class: header` for a member): the header as the file
spells it, the docstring's first line, a constant's value; a class's bases, each resolved
through its file's imports to where the workspace defines it (or the module outside it
that it comes from), its attributes and methods; and the names a function's body or a
constant's value uses that the workspace defines, so the next call has its name. A name
the workspace only imports says where from; a name it lacks gets the closest names.
Pure: it reads an index and, for what a body uses, the text of the files it names.
"""

from __future__ import annotations

import ast
import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass

from warmloop.workspace.code_index import CodeIndex, Found, SourceFile
from warmloop.workspace.definitions import (
    ATTRIBUTE,
    CLASS,
    CONSTANT,
    FUNCTION,
    METHOD,
    Definition,
)

MAX_SHOWN = 4
"""Definitions of one name shown in full; more are listed by place."""
MAX_MEMBERS = 16
MAX_USES = 8
MAX_IMPORTERS = 3
MAX_CLOSEST = 6
NOT_DEFINED = "no definition of "
"""How an answer for a name the workspace does not define starts (never a file's text)."""
CLOSEST = "closest names: "
READ_LINES = 40
"""The read a definition offers covers at most this many of its lines."""

TextOf = Callable[[str], str | None]
"""The text of a file of the workspace by its shown path (None when it cannot be read)."""


@dataclass(frozen=True)
class Target:
    """What a name leads to: definitions, or a module's file."""

    found: list[Found]
    module: SourceFile | None = None


def find_definition(index: CodeIndex, name: str, text_of: TextOf) -> str:
    """Where `name` is defined in the workspace and what it is, as tool output."""
    wanted = name.strip().strip("`'\"").removeprefix("self.").removesuffix("()")
    target = resolve(index, wanted)
    if target.module is not None:
        return _module(target.module, wanted)
    if not target.found:
        return _missing(index, wanted)
    shown = [_describe(index, f, text_of) for f in target.found[:MAX_SHOWN]]
    more = target.found[MAX_SHOWN:]
    if more:
        places = ", ".join(f"{f.file.path}:{f.definition.line}" for f in more[:8])
        shown.append(f"[{len(more)} more definitions of {wanted}: {places}]")
    importers = _importers(index, target.found[0])
    if importers:
        shown.append(f"  imported by: {', '.join(importers)}")
    return "\n".join(shown)


def resolve(index: CodeIndex, name: str) -> Target:
    """The definitions `name` leads to: a qualified name inside a file (`Stock.remove`),
    a module path and a name (`inventory.stock.Stock`), or a module's name; the defining
    places come before the files that only import the name."""
    if not name:
        return Target([])
    found = index.named(name)
    if found:
        return Target(_ranked(found, name))
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest module prefix that is a file
        module = index.module(".".join(parts[:cut]))
        if module is not None:
            rest = ".".join(parts[cut:])
            inside = [Found(module, d) for d in module.parsed.definitions if d.name == rest]
            if inside:
                return Target(inside)
    module = index.module(name)
    if module is not None:
        return Target([], module)
    imported = _imported_from_workspace(index, parts[-1])
    return Target(imported)


def _ranked(found: list[Found], name: str) -> list[Found]:
    """Definitions of a name, the likeliest first: spelled as asked (case and all), at a
    file's top level, then in path and line order."""
    return sorted(
        found,
        key=lambda f: (
            f.definition.name != name and f.definition.short != name,
            not f.definition.top_level,
            f.file.path,
            f.definition.line,
        ),
    )


def _imported_from_workspace(index: CodeIndex, name: str) -> list[Found]:
    """What an import binding `name` (`from .base import Base as Root` binds Root) leads
    to in the workspace."""
    for file in index.files:
        for imported in file.parsed.imports:
            if imported.name == name and imported.original:
                followed = index.follow(file, imported)
                if isinstance(followed, Found):
                    return [followed]
    return []


def _describe(index: CodeIndex, found: Found, text_of: TextOf) -> str:
    """One definition: its hit line, docstring, and what leads on from it."""
    file, definition = found.file, found.definition
    lines = [hit(file.path, definition)]
    if definition.summary:
        lines.append(f'  """{definition.summary}"""')
    if definition.kind == CLASS:
        lines += _class_details(index, found)
    elif definition.kind in (FUNCTION, METHOD, CONSTANT, ATTRIBUTE):
        uses = _uses(index, found, text_of)
        if uses:
            lines.append(f"  uses: {', '.join(uses)}")
    last = min(definition.end_line, definition.line + READ_LINES - 1)
    read = {"path": file.path, "start_line": definition.line, "end_line": last}
    lines.append(f"[read it: read_file {json.dumps(read, ensure_ascii=False)}]")
    return "\n".join(lines)


def hit(path: str, definition: Definition) -> str:
    """A definition as a search hit shows a line: `path:line: header`, or `path:line in
    Outer: header` for one inside a class."""
    outer = definition.name.rsplit(".", 1)[0] if not definition.top_level else ""
    within = f" in {outer}" if outer else ""
    return f"{path}:{definition.line}{within}: {definition.header}"


def _class_details(index: CodeIndex, found: Found) -> list[str]:
    """A class's bases, each followed to where it is defined, and its members as hits."""
    file, definition = found.file, found.definition
    lines = []
    if definition.bases:
        bases = [_where(index, file, base) for base in definition.bases]
        lines.append(f"  bases: {'; '.join(bases)}")
    prefix = f"{definition.name}."
    members = [
        d
        for d in file.parsed.definitions
        if d.name.startswith(prefix) and "." not in d.name[len(prefix) :]
    ]
    lines += [hit(file.path, d) for d in members[:MAX_MEMBERS]]
    if len(members) > MAX_MEMBERS:
        rest = ", ".join(d.short for d in members[MAX_MEMBERS:])
        lines.append(f"  and {len(members) - MAX_MEMBERS} more: {rest}")
    return lines


def _where(index: CodeIndex, file: SourceFile, written: str) -> str:
    """Where a name written in `file` (`ProtocolError`, `socketserver.TCPServer`) is
    defined: `ProtocolError, defined at h11/_util.py:18`, or the module it is imported
    from when that is outside the workspace."""
    head = written.split("(")[0].split("[")[0].strip()
    leads = _lead(index, file, head)
    if isinstance(leads, Found):
        return f"{written}, defined at {leads.file.path}:{leads.definition.line}"
    if isinstance(leads, str):
        return f"{written}, imported from {leads} (outside the workspace)"
    return written


def _lead(index: CodeIndex, file: SourceFile, written: str) -> Found | str | None:
    """The definition a name written in `file` leads to (its own top-level definition, or
    one an import binds), the module outside the workspace it is imported from, or None
    (a builtin such as `Exception`, or a name not known)."""
    first, _, rest = written.partition(".")
    for definition in file.parsed.definitions:
        if definition.name == written:
            return Found(file, definition)
    for imported in file.parsed.imports:
        if imported.name != first:
            continue
        followed = index.follow(file, imported)
        if isinstance(followed, Found) and not rest:
            return followed
        if isinstance(followed, SourceFile):  # `module.Name`: that module's Name
            for definition in followed.parsed.definitions:
                if definition.name == rest:
                    return Found(followed, definition)
        if followed is None:
            return index.importing(file, imported)
    return None


def _uses(index: CodeIndex, found: Found, text_of: TextOf) -> list[str]:
    """The names a function's body or a constant's value uses that the workspace defines
    (through the file's own definitions or its imports), each with its place."""
    file, definition = found.file, found.definition
    text = text_of(file.path)
    if text is None:
        return []
    lines = text.split("\n")[definition.line - 1 : definition.end_line]
    try:
        tree = ast.parse(_dedented(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in names and node.id != definition.short:
            names.append(node.id)
    uses = []
    for name in sorted(names, key=lambda n: _first_use(lines, n)):
        leads = _lead(index, file, name)
        if isinstance(leads, Found) and leads.definition is not definition:
            uses.append(f"{name} ({leads.file.path}:{leads.definition.line})")
        if len(uses) == MAX_USES:
            break
    return uses


def _first_use(lines: list[str], name: str) -> int:
    """Where `name` first appears in a definition's lines (for the order it is read in)."""
    text = "\n".join(lines)
    found = text.find(name)
    return found if found >= 0 else len(text)


def _dedented(lines: list[str]) -> str:
    """A definition's lines as a module would hold them: indentation of the first removed."""
    first = lines[0] if lines else ""
    indent = len(first) - len(first.lstrip())
    if not indent:
        return "\n".join(lines)
    return "\n".join(line[indent:] if line[:indent].isspace() else line.lstrip() for line in lines)


def _importers(index: CodeIndex, found: Found) -> list[str]:
    """The files that import a definition by name, each with the line of its import."""
    places = []
    for file in index.files:
        if file is found.file:
            continue
        for imported in file.parsed.imports:
            if imported.original != found.definition.name:
                continue
            if index.follow(file, imported) == found:
                places.append(f"{file.path}:{imported.line}")
                break
        if len(places) == MAX_IMPORTERS:
            break
    return places


def _module(module: SourceFile, name: str) -> str:
    """A module's name: the file it is, its docstring's first line, what it defines."""
    lines = [f"the module {name} is the file {module.path}"]
    summary = module.parsed.doc.strip().split("\n", 1)[0].strip()
    if summary:
        lines.append(f'  """{summary}"""')
    top = [d for d in module.parsed.definitions if d.top_level]
    lines += [hit(module.path, d) for d in top[:MAX_MEMBERS]]
    if len(top) > MAX_MEMBERS:
        lines.append(
            f"  and {len(top) - MAX_MEMBERS} more: {', '.join(d.short for d in top[MAX_MEMBERS:])}"
        )
    return "\n".join(lines)


def _missing(index: CodeIndex, name: str) -> str:
    """A name the workspace does not define: where it is imported from, if it is, and the
    closest names it does define."""
    lines = [f"{NOT_DEFINED}{name!r} in the workspace"]
    last = name.rsplit(".", 1)[-1]
    for file in index.files:
        for imported in file.parsed.imports:
            if imported.name == last:
                source = index.importing(file, imported)
                lines[0] += f"; {file.path}:{imported.line} imports it from {source}"
                break
        else:
            continue
        break
    known = sorted({f.definition.short for f in index.definitions()})
    closest = difflib.get_close_matches(last, known, n=MAX_CLOSEST, cutoff=0.6)
    lowered = last.lower()
    closest += [k for k in known if lowered in k.lower() and k not in closest][:MAX_CLOSEST]
    if closest:
        lines.append(f"{CLOSEST}{', '.join(closest[:MAX_CLOSEST])}")
    lines.append("[search finds where the name is written]")
    return "\n".join(lines)
