"""Read-only tools over one directory: list files, read a line range, search with a regex.

Every path a model names is walked one component at a time under the root, held open, and
refused unless it stays inside (I5): links that stay inside are followed, none that lead out,
and no directory swapped for a link mid-call can lead a read or a walk outside (`confined`).
Output is sorted and uses paths relative to the root, never
the absolute root, so the same files give byte-identical tool results on any machine (I4);
names that could be misread are printed JSON-quoted (`names`) and accepted back that way.
Every tool is bounded: only regular files are read, at most MAX_FILE_BYTES each (`files`);
a walk reads at most MAX_WALK_ENTRIES directory entries; search runs on RE2, in linear time
(`pattern`), over at most MAX_SEARCH_FILES files and MAX_SEARCH_BYTES bytes. A refusal is a
WorkspaceError or ValueError whose text never holds the absolute root.

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Concatenate, ParamSpec

from warmloop.errors import ConfigurationError, WorkspaceError
from warmloop.tools.tool import Tool
from warmloop.workspace.code_index import CodeIndex, ParseMemo
from warmloop.workspace.code_map import DEFAULT_MAP_TOKENS
from warmloop.workspace.confined import ConfinedRoot, Place, reason
from warmloop.workspace.files import Walk, kind, read_regular
from warmloop.workspace.follow import find_definition
from warmloop.workspace.grammar_paths import with_path_enums
from warmloop.workspace.map_build import MapBuild, build_map
from warmloop.workspace.map_cache import MapCache
from warmloop.workspace.names import parse_name, show_name
from warmloop.workspace.nearby import DEFINITION, SearchedFile, nearby
from warmloop.workspace.outline import Outline
from warmloop.workspace.pattern import LinePattern, compile_pattern
from warmloop.workspace.places import read_around

Match = tuple[str, int, str, str | None]
"""A search match: the file as shown, the line number, the line stripped, and the
definition the line is in (`outline`), if any."""
MAX_LISTED_FILES = 500
MAX_READ_LINES = 400
MAX_SEARCH_MATCHES = 100
MAX_MATCH_CHARS = 200
MAX_FILE_BYTES = 2_000_000
BINARY_SNIFF_BYTES = 8192
MAX_WALK_ENTRIES = 100_000
MAX_SEARCH_FILES = 5_000
MAX_SEARCH_BYTES = 20_000_000
MAX_ECHO_CHARS = 120
MAX_NAME_CHARS = 200
"""The longest name find_definition takes (a dotted module path and a name fit)."""
MAX_SKIPPED_SHOWN = 5
"""Unread files a search names; more are counted."""

WORKSPACE_INSTRUCTIONS = (
    "You can read the files of a workspace with list_files, read_file, search and "
    "find_definition. Paths are relative to the workspace root. Look before you answer; "
    "quote file paths and line numbers where they help."
)


def workspace_instructions(
    root: Path, *, budget_tokens: int = DEFAULT_MAP_TOKENS, cache: MapCache | None = None
) -> tuple[str, MapBuild]:
    """WORKSPACE_INSTRUCTIONS followed by the map of the workspace at `root` (its files and
    what each defines, in about `budget_tokens` tokens: `code_map`), and what building the
    map cost. The map is a pure function of the files, so every run over unchanged files
    has the same instructions, and so the same opening (its KV state is saved once)."""
    workspace = Workspace(root)
    build = build_map(workspace.root, workspace.source_files(), budget_tokens, cache)
    return f"{WORKSPACE_INSTRUCTIONS}\n\n{build.map.text}", build


P = ParamSpec("P")


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split on newlines only, `\\r\\n` tolerated."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _confined(
    method: Callable[Concatenate[Workspace, P], str],
) -> Callable[Concatenate[Workspace, P], str]:
    """A tool method whose every failure is a WorkspaceError or ValueError without the root."""

    @functools.wraps(method)
    def confined(self: Workspace, /, *args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return method(self, *args, **kwargs)
        except WorkspaceError as exc:
            raise WorkspaceError(self.scrub(str(exc))) from exc
        except ValueError as exc:
            raise ValueError(self.scrub(str(exc))) from exc
        except Exception as exc:  # an OS oddity we did not foresee: clear, and no root in it
            message = f"{method.__name__} failed: {type(exc).__name__}: {exc}"
            raise WorkspaceError(self.scrub(message)) from exc

    return confined


class Workspace:
    """A directory the tools may read; `locate` is the single gate for every path."""

    def __init__(self, root: Path) -> None:
        if not root.exists():
            raise ConfigurationError(f"workspace {root} does not exist; pass an existing directory")
        if not root.is_dir():
            raise ConfigurationError(f"workspace {root} is not a directory; pass a directory")
        self.root = root.resolve()
        try:
            self._confined = ConfinedRoot(self.root, [str(root.absolute())])
        except OSError as exc:
            raise ConfigurationError(
                f"workspace {root} cannot be opened ({exc.strerror})"
            ) from None
        self._parses = ParseMemo()  # what each file defines, by content: parsed once
        spellings = {str(self.root), str(root.absolute())} - {"/"}
        # Longest first, so a root inside another spelling is replaced whole.
        self._roots = sorted(spellings, key=len, reverse=True)
        quoted = [repr(s)[1:-1] for s in self._roots]
        self._root_pattern = re.compile(
            r"(?<![\w.~-])(?:"
            + "|".join(re.escape(s) for s in dict.fromkeys(self._roots + quoted))
            + r")(?![\w.~-])"
        )

    def scrub(self, message: str) -> str:
        """`message` with every absolute spelling of the root replaced by `<workspace>`."""
        return self._root_pattern.sub("<workspace>", message) if self._roots else message

    def echo(self, path: str) -> str:
        """`path` as a message quotes it: escaped, short, and the root spelled `<workspace>`."""
        for root in self._roots:
            if path == root or path.startswith(root + "/"):
                path = "<workspace>" + path[len(root) :]
                break
        return repr(shorten(path, MAX_ECHO_CHARS))

    def locate(self, path: str) -> Place:
        """Where `path` leads inside the workspace, open (use it in a `with` block);
        WorkspaceError if it leads outside or nowhere.

        `path` may be a name exactly as list_files shows it, JSON-quoted ones included.
        """
        name = parse_name(path)
        shown = self.echo(name)
        hint = "copy the path exactly as list_files shows it"
        if "\0" in name:
            raise WorkspaceError(f"path {shown} contains a NUL character; {hint}")
        try:
            os.fsencode(name)
        except UnicodeEncodeError:
            raise WorkspaceError(
                f"path {shown} contains a lone surrogate that no file name holds; {hint}"
            ) from None
        try:
            return self._confined.locate(name, shown)
        except OSError as exc:  # the walk's own descriptors failed (EMFILE, say)
            raise WorkspaceError(f"path {shown} cannot be opened ({reason(exc)})") from None

    def resolve(self, path: str) -> Path:
        """The real path `path` names inside the workspace, for display: the tools never open
        a path by name (it could change before the open), they `locate` it."""
        with self.locate(path) as place:
            return self.root.joinpath(*place.parts)

    def show(self, parts: tuple[str, ...]) -> str:
        """A path from the root as the model sees it: relative, `/`-separated, escaped."""
        return show_name("/".join(parts)) if parts else "."

    def walk(self, top: Place) -> Walk:
        """Regular files under `top`, sorted, within MAX_WALK_ENTRIES directory entries."""
        return Walk(top, MAX_WALK_ENTRIES, self._follow)

    def _follow(self, parts: tuple[str, ...]) -> Place | None:
        """Where the link at `parts` leads, if to a regular file inside; None otherwise."""
        try:
            place = self._confined.locate("/".join(parts), "")
        except (WorkspaceError, OSError):
            return None
        if stat.S_ISREG(place.info.st_mode):
            return place
        place.close()
        return None

    @_confined
    def list_files(self, path: str = ".") -> str:
        """Files under `path`, one relative path a line, sorted."""
        with self.locate(path) as top:
            what = kind(top.info.st_mode)
            if what not in (None, "a directory"):
                raise WorkspaceError(
                    f"{self.show(top.parts)} is {what}; list_files lists directories and files"
                )
            walk = self.walk(top)
            listed: list[str] = []
            for file in walk:
                if len(listed) == MAX_LISTED_FILES:
                    listed.append(
                        f"[listing stopped at {MAX_LISTED_FILES} files; list a subdirectory "
                        "to see more]"
                    )
                    break
                listed.append(self.show(file.parts))
            if walk.stopped:
                listed.append(
                    f"[listing stopped after {MAX_WALK_ENTRIES} directory entries; list a "
                    "subdirectory to see more]"
                )
            return "\n".join(listed) if listed else f"(no files under {self.show(top.parts)})"

    @_confined
    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Numbered lines `start_line`..`end_line` (1-based, inclusive) of one file."""
        with self.locate(path) as file:
            shown = self.show(file.parts)
            if stat.S_ISDIR(file.info.st_mode):
                raise WorkspaceError(f"{shown} is a directory; use list_files to see its files")
            first = 1 if start_line is None else start_line
            if first < 1 or (end_line is not None and end_line < first):
                raise ValueError(
                    f"bad line range {start_line}..{end_line}; lines are numbered from 1 and "
                    "end_line must not be before start_line"
                )
            data = read_regular(file.dir_fd, file.name, shown, MAX_FILE_BYTES)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise WorkspaceError(f"{shown} is a binary file; read_file only shows text files")
        # "replace" keeps odd encodings readable, the output deterministic and valid UTF-8.
        lines = split_lines(data.decode("utf-8", errors="replace"))
        total = len(lines)
        if total == 0:
            return f"{shown} is empty"
        if first > total:
            raise ValueError(f"start_line {first} is past the end of {shown} ({total} lines)")
        wanted = total if end_line is None else min(end_line, total)
        last = min(wanted, first + MAX_READ_LINES - 1)
        width = len(str(last))
        body = [f"{n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)]
        within = Outline.of(file.name, "\n".join(lines)).at(first)
        where = f", in {within}" if within else ""  # the lines start inside a definition
        if last < wanted:
            body.append(
                f"[lines {last + 1}-{wanted} not shown: at most {MAX_READ_LINES} lines per "
                f"read; read on with start_line={last + 1}]"
            )
        return "\n".join([f"{shown}: lines {first}-{last} of {total}{where}", *body])

    @_confined
    def search(self, pattern: str, path: str = ".") -> str:
        """Lines matching an RE2 pattern in the files under `path`, as `path:line: text`, or
        `path:line in NAME: text` inside a definition (`outline`)."""
        matcher = compile_pattern(pattern)
        with self.locate(path) as top:
            shown_top = self.show(top.parts)
            hits, note, skipped, searched = self._search(matcher, top)
        matches = [
            f"{shown}:{number}{f' in {within}' if within else ''}: {shorten(text, MAX_MATCH_CHARS)}"
            for shown, number, text, within in hits
        ]
        lines = matches or [f"no matches for {pattern!r} under {shown_top}"]
        if hits:  # a hit may only name the answer: the read that shows the lines around it
            lines.append(around_a_match(hits, matcher))
        closest = "" if matches else nearby(pattern, searched).describe()
        if closest:  # the words were there in another shape: somewhere to go next
            lines.append(closest)
        if skipped:  # a match may be in a file the search could not read: say which
            names = ", ".join(skipped[:MAX_SKIPPED_SHOWN])
            more = len(skipped) - MAX_SKIPPED_SHOWN
            names += f" and {more} more" if more > 0 else ""
            lines.append(
                f"[not searched: {len(skipped)} file(s) too big (over {MAX_FILE_BYTES:,} "
                f"bytes) or unreadable: {names}; read_file says why]"
            )
        return "\n".join([*lines, note] if note else lines)

    @_confined
    def find_definition(self, name: str) -> str:
        """Where the workspace defines `name` and what it is (`follow`): each definition as
        a hit, its docstring, a class's bases and members, what a body uses."""
        if len(name) > MAX_NAME_CHARS:
            raise ValueError(
                f"the name is {len(name)} characters, more than {MAX_NAME_CHARS}; pass one "
                "name (`Stock`, `Stock.remove`, `inventory.stock`)"
            )
        index = CodeIndex.build(self.source_files(), self._parses)
        return find_definition(index, name, self._text_of)

    def _text_of(self, shown: str) -> str | None:
        """The text of the file shown as `shown`, as read_file reads it; None if it cannot
        be read now."""
        try:
            with self.locate(shown) as file:
                data = read_regular(file.dir_fd, file.name, shown, MAX_FILE_BYTES)
        except WorkspaceError:
            return None
        return data.decode("utf-8", errors="replace")

    def _searched(self, shown: str, name: str, data: bytes, text: str) -> SearchedFile:
        """A file a search read, for `nearby`: its lines, its definitions (parsed once per
        content) and, read only if a line of it is shown, the definition each line is in."""
        digest = hashlib.sha256(data).hexdigest()
        outline = functools.cache(lambda: Outline.of(name, text))
        return SearchedFile(
            shown,
            split_lines(text),
            lambda: self._parses.parse(shown, digest, text)[0].definitions,
            lambda line: outline().at(line),
        )

    def source_files(self) -> Iterator[tuple[str, bytes]]:
        """Every text file of the workspace as shown and its bytes, within the bounds a
        search reads (MAX_SEARCH_FILES files, MAX_SEARCH_BYTES bytes, MAX_FILE_BYTES
        each); binary and unreadable files are left out."""
        files = size = 0
        with self.locate(".") as top:
            for file in self.walk(top):
                if files == MAX_SEARCH_FILES or size >= MAX_SEARCH_BYTES:
                    return
                shown = self.show(file.parts)
                try:
                    data = read_regular(file.dir_fd, file.name, shown, MAX_FILE_BYTES)
                except WorkspaceError:
                    continue
                files += 1
                size += len(data)
                if b"\0" not in data[:BINARY_SNIFF_BYTES]:
                    yield shown, data

    def _search(
        self, matcher: LinePattern, top: Place
    ) -> tuple[list[Match], str, list[str], list[SearchedFile]]:
        """The matches under `top` (each file as shown, line number, the line stripped), a
        note if the search stopped early, the files it
        could not read (too big, or not readable), and, while nothing matched, each file
        searched with its lines and definitions (for `nearby`)."""
        walk = self.walk(top)
        matches: list[Match] = []
        skipped: list[str] = []
        searched: list[SearchedFile] = []
        files = size = 0
        note = ""
        for file in walk:
            if files == MAX_SEARCH_FILES or size >= MAX_SEARCH_BYTES:
                note = (
                    f"[search stopped after reading {files} files ({size} bytes); narrow the path]"
                )
                break
            shown = self.show(file.parts)
            try:
                data = read_regular(file.dir_fd, file.name, shown, MAX_FILE_BYTES)
            except WorkspaceError:
                skipped.append(shown)  # read_file explains why if asked for it directly
                continue
            files += 1
            size += len(data)
            if b"\0" in data[:BINARY_SNIFF_BYTES]:
                continue
            # Re-encoded after "replace", so RE2 sees valid UTF-8 and the lines read_file sees.
            decoded = data.decode("utf-8", errors="replace")
            text = decoded.encode("utf-8")
            outline: Outline | None = None  # read once, and only for a file that matched
            for number, line in matcher.matching_lines(text):
                if len(matches) == MAX_SEARCH_MATCHES:
                    note = (
                        f"[stopped at {MAX_SEARCH_MATCHES} matches; narrow the pattern or the path]"
                    )
                    break
                outline = outline or Outline.of(file.name, decoded)
                matches.append((shown, number, line.decode("utf-8").strip(), outline.at(number)))
            if note:
                break
            if not matches:
                searched.append(self._searched(shown, file.name, data, decoded))
        if walk.stopped and not note:
            note = f"[search stopped after {MAX_WALK_ENTRIES} directory entries; narrow the path]"
        return matches, note, skipped, [] if matches else searched


def around_a_match(hits: list[Match], matcher: LinePattern) -> str:
    """The line a search ends with: the read_file call that shows the lines around its
    first match that defines a name the pattern matches, else that defines any name
    (`def f`, `class C`, `NAME = ...`), else its first match. From the matches as found,
    never parsed back from `path:line: text` (a name may hold `:12: `)."""

    def rank(hit: Match) -> int:
        defined = DEFINITION.match(hit[2])
        if defined is None:
            return 2
        name = (defined[1] or defined[2]).encode()
        return 1 if next(matcher.matching_lines(name), None) is None else 0

    path, line, _, _ = min(hits, key=rank)  # the first of the best rank
    arguments = read_around(parse_name(path), line)
    return f"[the lines around a match: read_file {json.dumps(arguments, ensure_ascii=False)}]"


def workspace_tools(root: Path) -> list[Tool]:
    """The read-only tools `list_files`, `read_file`, `search` and `find_definition`,
    confined to `root`; what they raise goes to the model as their error result
    (`errors_to_model`)."""
    workspace = Workspace(root)

    def list_files(path: str = ".") -> str:
        """List the files under a workspace directory, recursively: sorted relative paths."""
        return workspace.list_files(path)

    # These descriptions are what a model reads before its first call: the embedded model's
    # eval moves with their words. Describing the `in NAME` of a hit here (issue 37) made the
    # greedy model search a task's class (`BaseHandler`) instead of its distinctive term
    # (`error_status`): 7 held-out questions flipped, all back with these words. The hits and
    # reads show the enclosing name themselves.
    def read_file(path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a text file with numbered lines, optionally lines start_line..end_line only."""
        return workspace.read_file(path, start_line, end_line)

    def search(pattern: str, path: str = ".") -> str:
        """Search files under a path for a regex (RE2 syntax); each match is `path:line: text`."""
        return workspace.search(pattern, path)

    def find_definition(name: str) -> str:
        """Find where a function, class, constant or module is defined, and what it is."""
        return workspace.find_definition(name)

    # A path outside, a file that is not there, a bad pattern: the model's to fix, told.
    functions = (list_files, read_file, search, find_definition)
    tools = [Tool.from_function(f, errors_to_model=True) for f in functions]
    files = listed_files(workspace)
    return [with_path_enums(t, files) for t in tools]


MAX_GRAMMAR_PATHS = 300


def listed_files(workspace: Workspace) -> list[str] | None:
    """The files a model may name, as `list_files` shows them now; None when there are
    more than MAX_GRAMMAR_PATHS of them (or the walk was cut short)."""
    files: list[str] = []
    with workspace.locate(".") as top:
        walk = workspace.walk(top)
        for file in walk:
            if len(files) == MAX_GRAMMAR_PATHS:
                return None
            files.append(workspace.show(file.parts))
    return None if walk.stopped else files
