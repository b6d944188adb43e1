"""Read-only tools over one directory: list files, read a line range, search with a regex.

Every path a model names is resolved (following symlinks) and refused unless it stays
inside the workspace root (I5). Output is sorted and uses paths relative to the root, never
the absolute root, so the same files give byte-identical tool results on any machine (I4).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from warmloop.errors import ConfigurationError, WorkspaceError
from warmloop.tools import Tool

MAX_LISTED_FILES = 500
MAX_GRAMMAR_PATHS = 300
MAX_READ_LINES = 400
MAX_SEARCH_MATCHES = 100
MAX_MATCH_CHARS = 200
MAX_FILE_BYTES = 2_000_000
BINARY_SNIFF_BYTES = 8192
# Directories that hold tool state, not the project: listing them only buries the real files.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "__pycache__",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".idea",
    }
)

WORKSPACE_INSTRUCTIONS = (
    "You can read the files of a workspace with list_files, read_file and search. Paths are "
    "relative to the workspace root. Look before you answer; quote file paths and line "
    "numbers where they help."
)


def _is_skipped(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split on newlines only, `\\r\\n` tolerated."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Workspace:
    """A directory the tools may read; `resolve` is the single gate for every path."""

    def __init__(self, root: Path) -> None:
        if not root.exists():
            raise ConfigurationError(f"workspace {root} does not exist; pass an existing directory")
        if not root.is_dir():
            raise ConfigurationError(f"workspace {root} is not a directory; pass a directory")
        self.root = root.resolve()

    def resolve(self, path: str) -> Path:
        """The real path `path` names inside the workspace; WorkspaceError if it escapes."""
        try:
            # An absolute `path` replaces the root here; the containment check below catches it.
            resolved = (self.root / path).resolve()
        except (OSError, ValueError, RuntimeError) as exc:
            # NUL bytes or a symlink loop; the exception text would leak absolute paths.
            raise WorkspaceError(
                f"path {path!r} cannot be resolved (an invalid character or a symlink loop); "
                "use a plain relative path"
            ) from exc
        if not resolved.is_relative_to(self.root):
            raise WorkspaceError(
                f"path {path!r} is outside the workspace; use a path relative to the "
                "workspace root, as list_files shows them"
            )
        if not resolved.exists():
            raise WorkspaceError(f"{path!r} does not exist in the workspace; call list_files")
        return resolved

    def relative(self, path: Path) -> str:
        """`path` (inside the root) as the model sees it: relative, with forward slashes."""
        rel = path.relative_to(self.root).as_posix()
        return "." if rel == "" else rel

    def files(self, top: Path) -> Iterator[Path]:
        """Regular files under `top` in sorted path order, skipping tool-state directories.

        Symlinked directories are not entered (no loops); a symlinked file is yielded only
        if its target is inside the workspace, so a listing never hints at outside files.
        """
        if top.is_file():
            yield top
            return
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError:
            return  # unreadable directory: nothing the model can use
        for entry in entries:
            path = Path(entry.path)
            if entry.is_symlink():
                if self._inside(path) and path.is_file():
                    yield path
            elif entry.is_dir():
                if not _is_skipped(entry.name):
                    yield from self.files(path)
            elif entry.is_file():
                yield path

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False

    def text(self, path: Path, shown: str) -> str | None:
        """The file's text, or None for a binary file; WorkspaceError if too big or unreadable."""
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise WorkspaceError(
                    f"{shown} is {size} bytes, more than {MAX_FILE_BYTES}; use search to "
                    "find the part you need"
                )
            data = path.read_bytes()
        except OSError as exc:
            # The OSError text names the absolute path, which must not reach the prompt.
            raise WorkspaceError(f"{shown} cannot be read ({exc.strerror})") from exc
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            return None
        # "replace" keeps odd encodings readable and the output deterministic.
        return data.decode("utf-8", errors="replace")

    def list_files(self, path: str = ".") -> str:
        """Files under `path`, one relative path a line, sorted."""
        top = self.resolve(path)
        listed: list[str] = []
        for file in self.files(top):
            if len(listed) == MAX_LISTED_FILES:
                listed.append(
                    f"[listing stopped at {MAX_LISTED_FILES} files; list a subdirectory "
                    "to see more]"
                )
                break
            listed.append(self.relative(file))
        return "\n".join(listed) if listed else f"(no files under {self.relative(top)})"

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
        text = self.text(file, shown)
        if text is None:
            raise WorkspaceError(f"{shown} is a binary file; read_file only shows text files")
        lines = split_lines(text)
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

    def search(self, pattern: str, path: str = ".") -> str:
        """Lines matching a Python regex in the files under `path`, as `path:line: text`."""
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ValueError(
                f"invalid regular expression {pattern!r}: {exc}; escape special characters "
                "such as ( [ * + ? with a backslash"
            ) from exc
        top = self.resolve(path)
        matches: list[str] = []
        for file in self.files(top):
            shown = self.relative(file)
            try:
                text = self.text(file, shown)
            except WorkspaceError:
                continue  # too big or unreadable; read_file explains if asked for directly
            if text is None:
                continue
            for number, line in enumerate(split_lines(text), start=1):
                if regex.search(line):
                    if len(matches) == MAX_SEARCH_MATCHES:
                        return "\n".join(
                            [
                                *matches,
                                f"[stopped at {MAX_SEARCH_MATCHES} matches; narrow the "
                                "pattern or the path]",
                            ]
                        )
                    matches.append(f"{shown}:{number}: {shorten(line.strip(), MAX_MATCH_CHARS)}")
        if not matches:
            return f"no matches for {pattern!r} under {self.relative(top)}"
        return "\n".join(matches)


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
        """Search files under a path for a Python regex; each match is `path:line: text`."""
        return workspace.search(pattern, path)

    tools = [Tool.from_function(f) for f in (list_files, read_file, search)]
    return [with_path_enums(t, workspace) for t in tools]


def listed_files(workspace: Workspace) -> list[str] | None:
    """The files a model may name, as listed now; None when there are more than
    MAX_GRAMMAR_PATHS of them."""
    files: list[str] = []
    for file in workspace.files(workspace.root):
        if len(files) == MAX_GRAMMAR_PATHS:
            return None
        files.append(workspace.relative(file))
    return files


def with_path_enums(tool: Tool, workspace: Workspace) -> Tool:
    """`tool` with a grammar-only schema over the paths that exist: read_file reads one of
    the files; search and list_files always cover the whole workspace, since in one small
    enough to enumerate a narrower folder only hides matches (small models narrow to the
    code folder and miss the settings and data). The schema the model reads is unchanged,
    so the prompt is the same; only a local model's constrained decoding narrows. A
    workspace too big to enumerate keeps the free string."""
    files = listed_files(workspace)
    parameters = tool.spec.parameters
    properties = parameters.get("properties")
    if files is None or not isinstance(properties, dict) or "path" not in properties:
        return tool
    if tool.name == "read_file":
        narrowed = {**properties, "path": {"type": "string", "enum": files}}
    else:
        narrowed = {name: schema for name, schema in properties.items() if name != "path"}
    spec = replace(tool.spec, grammar_parameters={**parameters, "properties": narrowed})
    return replace(tool, spec=spec)
