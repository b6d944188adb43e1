"""The definitions of a whole workspace, by name and by module, read once per file content.

The map, `find_definition` and the search that forgives all ask one index: which files
there are, what each defines (`definitions`), which module name leads to which file
(`inventory.stock` and `stock` to `inventory/stock.py`), and where a name is defined. A
file is parsed again only when its bytes change: each file's parse is kept by the SHA-256
of its content (`ParseMemo`, which a `MapCache` keeps on disk between processes), so a
second index of the same workspace reads and hashes its files and parses none. Pure given
the files it is handed, which the workspace reads inside its root (`Workspace.source_files`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from warmloop.workspace.definitions import Definition, Imported, Parsed, parse
from warmloop.workspace.outline import PYTHON_SUFFIXES

MAX_REEXPORTS = 4
"""Modules an import is followed through (`__init__.py` importing from `_parser.py`)."""


@dataclass(frozen=True)
class SourceFile:
    """One file of the workspace as the tools show it, its content's digest, its line
    count and what it defines."""

    path: str
    digest: str
    lines: int
    parsed: Parsed

    @property
    def modules(self) -> list[str]:
        """The module names that may lead to this file, longest first: `a/b/c.py` is
        `a.b.c`, `b.c` and `c`; `a/b/__init__.py` is `a.b` and `b`."""
        if not self.path.endswith(PYTHON_SUFFIXES):
            return []
        parts = self.path.rsplit(".", 1)[0].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        return [".".join(parts[i:]) for i in range(len(parts))]

    @property
    def package(self) -> list[str]:
        """The package a relative import in this file starts from, as path parts."""
        parts = self.path.split("/")[:-1]
        return parts


@dataclass
class ParseMemo:
    """Parses by content digest: a file whose bytes are unchanged is not parsed again."""

    parsed: dict[str, Parsed] = field(default_factory=dict)

    @staticmethod
    def key(path: str, digest: str) -> str:
        """A parse's key: the content's digest and the file's suffix (the same bytes in a
        file of another kind are read another way)."""
        return f"{digest}:{path.rsplit('/', 1)[-1].rsplit('.', 1)[-1]}"

    def parse(self, path: str, digest: str, text: str) -> tuple[Parsed, bool]:
        """What the file defines, and whether it was parsed now (False: remembered)."""
        key = self.key(path, digest)
        found = self.parsed.get(key)
        if found is not None:
            return found, False
        found = parse(path, text)
        self.parsed[key] = found
        return found, True


@dataclass(frozen=True)
class Found:
    """A definition and the file it is in."""

    file: SourceFile
    definition: Definition


@dataclass(frozen=True)
class BuildCost:
    """What building an index cost: files read, files parsed now (new or changed since
    the memo last saw them), and seconds."""

    files: int
    parsed: int
    seconds: float


class CodeIndex:
    """Every file handed to it and what each defines, looked up by name or module."""

    def __init__(self, files: Iterable[SourceFile], cost: BuildCost | None = None) -> None:
        self.files = tuple(sorted(files, key=lambda f: f.path))
        self.cost = cost or BuildCost(len(self.files), 0, 0.0)
        self._by_module: dict[str, SourceFile] = {}
        for file in self.files:
            for module in file.modules:
                self._by_module.setdefault(module, file)
        self._by_name: dict[str, list[Found]] = {}
        for file in self.files:
            for definition in file.parsed.definitions:
                for key in {definition.name, definition.short}:
                    self._by_name.setdefault(key, []).append(Found(file, definition))

    @classmethod
    def build(
        cls,
        files: Iterable[tuple[str, bytes]],
        memo: ParseMemo | None = None,
        *,
        parse: bool = True,
    ) -> CodeIndex:
        """The index of `files` (each a path as shown and its bytes), parsing only what
        `memo` has not seen; with `parse=False`, only the files (what they define is left
        unread)."""
        memo = memo if memo is not None else ParseMemo()
        started = time.perf_counter()
        read: list[SourceFile] = []
        parsed_now = 0
        for path, data in files:
            digest = hashlib.sha256(data).hexdigest()
            text = data.decode("utf-8", errors="replace")
            parsed, fresh = memo.parse(path, digest, text) if parse else (Parsed(), False)
            parsed_now += fresh
            read.append(SourceFile(path, digest, text.count("\n") + 1, parsed))
        cost = BuildCost(len(read), parsed_now, time.perf_counter() - started)
        return cls(read, cost)

    @property
    def lines(self) -> int:
        """Lines in all the files read."""
        return sum(f.lines for f in self.files)

    def definitions(self) -> Iterator[Found]:
        """Every definition of every file, in path and line order."""
        for file in self.files:
            for definition in file.parsed.definitions:
                yield Found(file, definition)

    def named(self, name: str) -> list[Found]:
        """The definitions called `name`: its last part (`remove`) or qualified inside its
        file (`Stock.remove`), in path and line order."""
        return list(self._by_name.get(name, []))

    def module(self, dotted: str) -> SourceFile | None:
        """The file a module name leads to (`inventory.stock`), if it is in the workspace."""
        return self._by_module.get(dotted)

    def importing(self, file: SourceFile, imported: Imported) -> str:
        """The absolute module name an import in `file` names (`._parser` in
        `tomllib/__init__.py` is `tomllib._parser`)."""
        module = imported.module
        level = len(module) - len(module.lstrip("."))
        if not level:
            return module
        parts = file.package
        base = parts[: len(parts) - level + 1] if level > 1 else parts
        rest = module[level:]
        return ".".join([*base, *([rest] if rest else [])])

    def follow(
        self, file: SourceFile, imported: Imported, depth: int = 0
    ) -> Found | SourceFile | None:
        """Where an import in `file` leads inside the workspace: the definition it binds
        (through at most MAX_REEXPORTS modules that import it in turn), the module file it
        binds, or None when it leads outside."""
        module = self.importing(file, imported)
        if not imported.original:
            return self.module(module)
        target = self.module(module)
        if target is None:
            return None
        for definition in target.parsed.definitions:
            if definition.name == imported.original:
                return Found(target, definition)
        submodule = self.module(f"{module}.{imported.original}")  # `from . import _tzpath`
        if submodule is not None:
            return submodule
        for again in target.parsed.imports:  # re-exported: `from ._parser import loads`
            if again.name == imported.original and depth < MAX_REEXPORTS:
                followed = self.follow(target, again, depth + 1)
                if followed is not None:
                    return followed
        return None
