"""Read-only tools over one directory: list files, read a line range, search with a regex.

Every path a model names is resolved (following symlinks) and refused unless it stays
inside the workspace root (I5). Output is sorted and uses paths relative to the root, never
the absolute root, so the same files give byte-identical tool results on any machine (I4);
names that could be misread are printed JSON-quoted (`names`) and accepted back that way.
Every tool is bounded: only regular files are read, at most MAX_FILE_BYTES each (`files`);
a walk reads at most MAX_WALK_ENTRIES directory entries; search runs on RE2, in linear time
(`pattern`), over at most MAX_SEARCH_FILES files and MAX_SEARCH_BYTES bytes. A refusal is a
WorkspaceError or ValueError whose text never holds the absolute root.
"""

from __future__ import annotations

import errno
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec

from warmloop.errors import ConfigurationError, WorkspaceError
from warmloop.tools import Tool
from warmloop.workspace.files import Walk, kind, read_regular, reason
from warmloop.workspace.grammar_paths import with_path_enums
from warmloop.workspace.names import parse_name, show_name
from warmloop.workspace.pattern import compile_pattern

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

WORKSPACE_INSTRUCTIONS = (
    "You can read the files of a workspace with list_files, read_file and search. Paths are "
    "relative to the workspace root. Look before you answer; quote file paths and line "
    "numbers where they help."
)

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
    """A directory the tools may read; `resolve` is the single gate for every path."""

    def __init__(self, root: Path) -> None:
        if not root.exists():
            raise ConfigurationError(f"workspace {root} does not exist; pass an existing directory")
        if not root.is_dir():
            raise ConfigurationError(f"workspace {root} is not a directory; pass a directory")
        self.root = root.resolve()
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

    def resolve(self, path: str) -> Path:
        """The real path `path` names inside the workspace; WorkspaceError if it escapes.

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
            # An absolute `path` replaces the root here; the containment check below catches it.
            resolved = (self.root / name).resolve()
        except RuntimeError:
            raise WorkspaceError(f"path {shown} is a symlink loop; {hint}") from None
        except OSError as exc:
            raise WorkspaceError(f"path {shown} cannot be resolved ({reason(exc)})") from None
        if not resolved.is_relative_to(self.root):
            raise WorkspaceError(
                f"path {shown} is outside the workspace; use a path relative to the "
                "workspace root, as list_files shows them"
            )
        try:
            os.stat(resolved)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                raise WorkspaceError(
                    f"{shown} does not exist in the workspace; call list_files"
                ) from None
            if exc.errno == errno.ELOOP:  # what newer Pythons report instead of RuntimeError
                raise WorkspaceError(f"path {shown} is a symlink loop; {hint}") from None
            raise WorkspaceError(f"path {shown} cannot be opened ({reason(exc)})") from None
        return resolved

    def relative(self, path: Path) -> str:
        """`path` (inside the root) as the model sees it: relative, `/`-separated, escaped."""
        rel = path.relative_to(self.root).as_posix()
        return "." if rel in ("", ".") else show_name(rel)

    def walk(self, top: Path) -> Walk:
        """Regular files under `top`, sorted, within MAX_WALK_ENTRIES directory entries."""
        return Walk(top, MAX_WALK_ENTRIES, self._inside)

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError, ValueError):
            return False

    @_confined
    def list_files(self, path: str = ".") -> str:
        """Files under `path`, one relative path a line, sorted."""
        top = self.resolve(path)
        what = kind(top.stat().st_mode)
        if what not in (None, "a directory"):
            raise WorkspaceError(
                f"{self.relative(top)} is {what}; list_files lists directories and files"
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
            listed.append(self.relative(file))
        if walk.stopped:
            listed.append(
                f"[listing stopped after {MAX_WALK_ENTRIES} directory entries; list a "
                "subdirectory to see more]"
            )
        return "\n".join(listed) if listed else f"(no files under {self.relative(top)})"

    @_confined
    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Numbered lines `start_line`..`end_line` (1-based, inclusive) of one file."""
        file = self.resolve(path)
        shown = self.relative(file)
        if file.is_dir():
            raise WorkspaceError(f"{shown} is a directory; use list_files to see its files")
        first = 1 if start_line is None else start_line
        if first < 1 or (end_line is not None and end_line < first):
            raise ValueError(
                f"bad line range {start_line}..{end_line}; lines are numbered from 1 and "
                "end_line must not be before start_line"
            )
        data = read_regular(file, shown, MAX_FILE_BYTES)
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
        if last < wanted:
            body.append(
                f"[lines {last + 1}-{wanted} not shown: at most {MAX_READ_LINES} lines per "
                f"read; read on with start_line={last + 1}]"
            )
        return "\n".join([f"{shown}: lines {first}-{last} of {total}", *body])

    @_confined
    def search(self, pattern: str, path: str = ".") -> str:
        """Lines matching an RE2 pattern in the files under `path`, as `path:line: text`."""
        matcher = compile_pattern(pattern)
        top = self.resolve(path)
        walk = self.walk(top)
        matches: list[str] = []
        files = size = 0
        note = ""
        for file in walk:
            if files == MAX_SEARCH_FILES or size >= MAX_SEARCH_BYTES:
                note = (
                    f"[search stopped after reading {files} files ({size} bytes); narrow the path]"
                )
                break
            shown = self.relative(file)
            try:
                # Only the last part can be a link (the walk does not enter linked directories);
                # it is read at its target, checked again in case the link changed.
                real = file.resolve() if file.is_symlink() else file
                if not real.is_relative_to(self.root):
                    continue
                data = read_regular(real, shown, MAX_FILE_BYTES)
            except (WorkspaceError, OSError, RuntimeError):
                continue  # too big or unreadable; read_file explains if asked for directly
            files += 1
            size += len(data)
            if b"\0" in data[:BINARY_SNIFF_BYTES]:
                continue
            # Re-encoded after "replace", so RE2 sees valid UTF-8 and the lines read_file sees.
            text = data.decode("utf-8", errors="replace").encode("utf-8")
            for number, line in matcher.matching_lines(text):
                if len(matches) == MAX_SEARCH_MATCHES:
                    note = (
                        f"[stopped at {MAX_SEARCH_MATCHES} matches; narrow the pattern or the path]"
                    )
                    break
                found = line.decode("utf-8").strip()
                matches.append(f"{shown}:{number}: {shorten(found, MAX_MATCH_CHARS)}")
            if note:
                break
        if walk.stopped and not note:
            note = f"[search stopped after {MAX_WALK_ENTRIES} directory entries; narrow the path]"
        lines = matches or [f"no matches for {pattern!r} under {self.relative(top)}"]
        return "\n".join([*lines, note] if note else lines)


def workspace_tools(root: Path) -> list[Tool]:
    """The read-only tools `list_files`, `read_file` and `search`, confined to `root`."""
    workspace = Workspace(root)

    def list_files(path: str = ".") -> str:
        """List the files under a workspace directory, recursively: sorted relative paths."""
        return workspace.list_files(path)

    def read_file(path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a text file with numbered lines, optionally lines start_line..end_line only."""
        return workspace.read_file(path, start_line, end_line)

    def search(pattern: str, path: str = ".") -> str:
        """Search files under a path for a regex (RE2 syntax); each match is `path:line: text`."""
        return workspace.search(pattern, path)

    tools = [Tool.from_function(f) for f in (list_files, read_file, search)]
    return [with_path_enums(t, workspace) for t in tools]
