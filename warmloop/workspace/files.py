"""Bounded file-system access for the workspace tools: read a regular file, walk a tree.

Both work through directory descriptors (`confined`): a file is opened by name in its open
directory with O_NOFOLLOW, and a walk lists and enters directories the same way, so no
link and no swap mid-walk leads them outside the workspace. Nothing here can block or run
without limit: FIFOs, sockets and devices are refused before
they are opened (opening a FIFO blocks, reading /dev/zero never ends); a regular file is
opened non-blocking and read up to a limit even if it reports size 0 (/proc files do); a walk
is iterative (no recursion limit on deep trees) and stops after a budget of entries.
Messages name files only as the caller shows them, never by absolute path.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable, Iterator
from typing import NamedTuple

from warmloop.errors import WorkspaceError
from warmloop.workspace.confined import READ_DIRECTORY, Cursor, Moved, Place, reason

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
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),  # only where a file was swapped for a link mid-call
)
_CHUNK_BYTES = 1 << 20


def kind(mode: int) -> str | None:
    """None for a regular file, else what the file is ("a FIFO (named pipe)", ...)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(shown: str, what: str) -> WorkspaceError:
    return WorkspaceError(
        f"{shown} is {what}, not a regular file; read_file and search only read regular files"
    )


def _too_big(shown: str, size: str, limit: int) -> WorkspaceError:
    return WorkspaceError(
        f"{shown} is {size} bytes, more than the {limit} that read_file and search read; "
        "it cannot be read with these tools"
    )


def read_regular(dir_fd: int, name: str, shown: str, limit: int) -> bytes:
    """The bytes of the regular file `name` in the open directory `dir_fd`, at most `limit`;
    WorkspaceError for anything else (a link there now is refused, never followed)."""
    try:
        what = kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        if what is not None:
            raise _refuse(shown, what)
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        raise WorkspaceError(f"{shown} cannot be read ({reason(exc)})") from exc
    try:
        info = os.fstat(fd)
        # Checked again on the open file, in case the name was swapped after the stat.
        what = kind(info.st_mode)
        if what is not None:
            raise _refuse(shown, what)
        if info.st_size > limit:
            raise _too_big(shown, str(info.st_size), limit)
        chunks: list[bytes] = []
        left = limit + 1  # one byte more than allowed tells "too big" from "exactly full"
        while left > 0 and (chunk := os.read(fd, min(left, _CHUNK_BYTES))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise WorkspaceError(f"{shown} cannot be read ({reason(exc)})") from exc
    finally:
        os.close(fd)
    if left <= 0:  # a file that reports a small size (as /proc files do) but keeps producing
        raise _too_big(shown, f"more than {limit}", limit)
    return b"".join(chunks)


def is_skipped(name: str) -> bool:
    """True for tool-state directories (.git, node_modules, *.egg-info) that walks skip."""
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


class Found(NamedTuple):
    """A regular file a walk found: `parts` from the root, as listings show it, and entry
    `name` of the open directory `dir_fd` to read it by, valid until the walk moves on."""

    parts: tuple[str, ...]
    dir_fd: int
    name: str


_LINK, _DIRECTORY, _FILE = "link", "directory", "file"


class Walk:
    """Regular files under `top` in sorted path order, reading at most `budget` entries.

    The walk lists and opens through directory descriptors, each subdirectory by name with
    O_NOFOLLOW, so a directory swapped for a link mid-walk is skipped, never entered. Tool-state
    directories are skipped and linked directories are not entered (no loops); a linked file
    is yielded (under its own name) only if `follow(parts)` finds it inside the workspace, so a
    listing never hints at outside files. FIFOs, sockets and devices are not yielded. After
    the walk, `stopped` says whether the budget ran out; which entries fit in it does not
    depend on directory order.
    """

    def __init__(
        self, top: Place, budget: int, follow: Callable[[tuple[str, ...]], Place | None]
    ) -> None:
        self.top = top
        self.left = budget
        self.follow = follow
        self.stopped = False

    def _entries(self, fd: int) -> list[tuple[str, str]] | None:
        """(name, what) of the directory open at `fd`, sorted; None when over the budget."""
        try:
            with os.scandir(fd) as scan:
                entries = list(itertools.islice(scan, self.left + 1))
        except OSError:
            return []  # unreadable directory: nothing the model can use
        if len(entries) > self.left:
            self.stopped = True
            return None
        self.left -= len(entries)
        listed: list[tuple[str, str]] = []
        for entry in entries:
            try:  # while `fd` is open: a file system without d_type stats through it
                if entry.is_symlink():
                    listed.append((entry.name, _LINK))
                elif entry.is_dir(follow_symlinks=False):
                    listed.append((entry.name, _DIRECTORY))
                elif entry.is_file(follow_symlinks=False):
                    listed.append((entry.name, _FILE))
            except OSError:
                continue  # the entry vanished or cannot be inspected: skip it
        return sorted(listed)

    def __iter__(self) -> Iterator[Found]:
        top = self.top
        if stat.S_ISREG(top.info.st_mode):
            yield Found(top.parts, top.dir_fd, top.name)
            return
        if not stat.S_ISDIR(top.info.st_mode):
            return  # a FIFO, socket or device: nothing to walk
        try:
            cursor = Cursor(os.open(top.name, READ_DIRECTORY, dir_fd=top.dir_fd), READ_DIRECTORY)
        except OSError:
            return  # not a directory (now), or unreadable: nothing to list
        try:
            yield from self._walk(cursor)
        finally:
            cursor.close()

    def _walk(self, cursor: Cursor) -> Iterator[Found]:
        stack = [iter(self._entries(cursor.fd) or [])]
        while stack and not self.stopped:
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
                if stack:
                    try:
                        cursor.up()
                    except (Moved, OSError):
                        return  # a directory moved mid-walk: stop rather than guess where
                continue
            name, what = entry
            parts = (*self.top.parts, *cursor.names, name)
            if what == _FILE:
                yield Found(parts, cursor.fd, name)
            elif what == _LINK:
                target = self.follow(parts)
                if target is not None:
                    with target:
                        yield Found(parts, target.dir_fd, target.name)
            elif not is_skipped(name):
                try:
                    cursor.down(name)
                except OSError:
                    continue  # swapped for a link, gone, or unreadable: not entered
                entries = self._entries(cursor.fd)
                if entries is not None:
                    stack.append(iter(entries))
