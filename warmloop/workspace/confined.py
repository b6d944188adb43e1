"""Paths opened under a directory held open, so that no link and no race leads out of it.

A path checked and then opened by name can change in between: a directory swapped for a
symlink after the check sends the open outside. So no path is opened by name from `/`. The
root is held open once, and a path is walked one component at a time, each opened relative
to the directory before it with O_NOFOLLOW, so the kernel never follows a link for us and
every open names one entry of a directory already inside. The check and the open are the
same act.

A link met on the way is read (relative to its directory) and its target walked in its
place, as the kernel would, by the same rules: `..` goes back up to the directory the walk
came from (checked to be that very directory), never above the root; a target that leaves
the root (an absolute path, or `..` past the root) is taken lexically and refused unless it
names a place under a spelling of the root, where the walk starts again from the root. So a
link that stays inside is followed, and one that leads out is refused, whatever is swapped
while the walk runs. Linux only (O_PATH, openat semantics), like the project.
"""

from __future__ import annotations

import errno
import os
import stat
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from warmloop.errors import WorkspaceError

MAX_LINKS = 40  # links followed in one path, as the kernel allows
MAX_RETRIES = 40  # a component that keeps changing kind while it is opened
MAX_PATH_BYTES = 4096  # PATH_MAX: a longer name cannot be a path on Linux

# O_PATH: a directory needs only search permission to be walked through, as with a path.
WALK_THROUGH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def reason(exc: OSError) -> str:
    """What went wrong, without the file name (which would be an absolute path)."""
    return exc.strerror or type(exc).__name__


def split(path: str) -> list[str]:
    """The components of `path`, without the empty and `.` ones."""
    return [part for part in path.split("/") if part not in ("", ".")]


class Moved(Exception):
    """A directory the walk stood in was moved away while it was walked."""


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


class Cursor:
    """One directory descriptor that moves down by name and back up, never through a link.

    Only the current directory is held open, so a tree of any depth costs one descriptor;
    going up opens `..` and checks it is the very directory the cursor came down from (a
    directory moved elsewhere meanwhile would have another parent: Moved).
    """

    def __init__(self, fd: int, flags: int) -> None:
        self.fd = fd
        self.flags = flags
        self.names: list[str] = []
        self._identities = [_identity(fd)]

    def down(self, name: str) -> None:
        """Into the directory `name`; OSError (ELOOP, ENOTDIR) if it is a link or no directory."""
        fd = os.open(name, self.flags, dir_fd=self.fd)
        try:
            identity = _identity(fd)
        except OSError:
            os.close(fd)
            raise
        os.close(self.fd)
        self.fd = fd
        self.names.append(name)
        self._identities.append(identity)

    def up(self) -> None:
        """Back to the directory above, the one the cursor came down from; Moved otherwise."""
        fd = os.open("..", self.flags, dir_fd=self.fd)
        try:
            if _identity(fd) != self._identities[-2]:
                raise Moved
        except BaseException:
            os.close(fd)
            raise
        os.close(self.fd)
        self.fd = fd
        self.names.pop()
        self._identities.pop()

    def release(self) -> int:
        """The current descriptor, now the caller's to close."""
        fd, self.fd = self.fd, -1
        return fd

    def close(self) -> None:
        if self.fd != -1:
            os.close(self.fd)
            self.fd = -1


@dataclass
class _Walk:
    """One walk of `locate`: the parts still to take (the next last), the directory it is
    in, and the links followed and retries taken so far (both bounded)."""

    pending: list[str]
    cursor: Cursor
    shown: str
    links: int = 0
    retries: int = 0

    def restart(self, cursor: Cursor) -> None:
        """Go on from `cursor` (the root), closing the one it was in."""
        self.cursor.close()
        self.cursor = cursor


@dataclass
class Place:
    """Where a path led: entry `name` of the open directory `dir_fd` (`.`: that directory).

    `parts` spell it from the root with links resolved, as messages show it; `info` is its
    status, never a link's. The place owns `dir_fd`: use it in a `with` block.
    """

    parts: tuple[str, ...]
    dir_fd: int
    name: str
    info: os.stat_result

    def close(self) -> None:
        if self.dir_fd != -1:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Place:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class ConfinedRoot:
    """The workspace root, held open, and the one way to find a path under it (`locate`)."""

    def __init__(self, path: Path, spellings: Sequence[str]) -> None:
        """`path` is the real root; `spellings` are the absolute names it goes by."""
        self.path = path
        self.fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        weakref.finalize(self, os.close, self.fd)
        names = {os.path.normpath(s) for s in (str(path), *spellings)}
        self._spellings = sorted(names, key=len, reverse=True)  # the longest first

    def locate(self, name: str, shown: str) -> Place:
        """Where `name` (relative to the root, or absolute under it) leads; WorkspaceError if
        it leads outside, does not exist, or cannot be walked. `shown` is how messages quote it.
        """
        if len(os.fsencode(name)) >= MAX_PATH_BYTES:
            raise WorkspaceError(
                f"path {shown} cannot be opened ({os.strerror(errno.ENAMETOOLONG)})"
            )
        pending = self._under_root(name, shown) if name.startswith("/") else split(name)
        pending.reverse()  # popped from the end
        walk = _Walk(pending, self._cursor(), shown)
        try:
            while walk.pending:
                part = walk.pending.pop()
                if part == "..":
                    self._left(walk)
                    continue
                info = self._lstat(part, walk.cursor.fd, shown)
                if stat.S_ISLNK(info.st_mode):
                    self._followed(walk, part)
                    continue
                if not walk.pending:
                    parts = (*walk.cursor.names, part)
                    return Place(parts, walk.cursor.release(), part, info)
                if not stat.S_ISDIR(info.st_mode):
                    raise self._missing(shown)
                self._entered(walk, part)
            info = os.fstat(walk.cursor.fd)
            return Place(tuple(walk.cursor.names), walk.cursor.release(), ".", info)
        finally:
            walk.cursor.close()

    def _left(self, walk: _Walk) -> None:
        """Step up to the parent; above the root, only a way back in under the root's own
        name (the walk starts again at the root)."""
        if walk.cursor.names:
            self._up(walk.cursor, walk.shown)
            return
        walk.pending = self._restart(str(self.path) + "/..", walk.pending, walk.shown)
        walk.restart(self._cursor())

    def _followed(self, walk: _Walk, part: str) -> None:
        """Follow the link `part` of the cursor's directory: its target's parts go next (an
        absolute target starts the walk again at the root, under it)."""
        walk.links += 1
        if walk.links > MAX_LINKS:
            raise WorkspaceError(
                f"path {walk.shown} is a symlink loop; copy the path exactly as list_files shows it"
            )
        try:
            target = os.readlink(part, dir_fd=walk.cursor.fd)
        except OSError:
            walk.retries = self._retry(walk.retries, walk.shown)
            walk.pending.append(part)  # no longer a link: look again
            return
        if target.startswith("/"):
            walk.pending = self._restart(target, walk.pending, walk.shown)
            walk.restart(self._cursor())
        else:
            walk.pending.extend(reversed(split(target)))

    def _entered(self, walk: _Walk, part: str) -> None:
        """Step down into the directory `part`; one swapped since its lstat is looked at
        again (a bounded number of times)."""
        try:
            walk.cursor.down(part)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                raise WorkspaceError(
                    f"path {walk.shown} cannot be opened ({reason(exc)})"
                ) from None
            walk.retries = self._retry(walk.retries, walk.shown)
            walk.pending.append(part)  # swapped since the lstat: look again

    def _cursor(self) -> Cursor:
        # The cursor closes what it holds, so it starts on a descriptor of its own.
        return Cursor(os.open(".", WALK_THROUGH, dir_fd=self.fd), WALK_THROUGH)

    def _under_root(self, absolute: str, shown: str) -> list[str]:
        """The components of the absolute `absolute` below the root, taken lexically."""
        path = "/" + os.path.normpath(absolute).lstrip("/")
        for spelling in self._spellings:
            if spelling == "/":
                return split(path)
            if path == spelling or path.startswith(spelling + "/"):
                return split(path[len(spelling) :])
        raise WorkspaceError(
            f"path {shown} is outside the workspace; use a path relative to the workspace "
            "root, as list_files shows them"
        )

    def _restart(self, absolute: str, pending: list[str], shown: str) -> list[str]:
        """The pending components (reversed), with the walk about to start again at the root."""
        rest = [absolute, *reversed(pending)]
        within = self._under_root("/".join(rest), shown)
        within.reverse()
        return within

    @staticmethod
    def _up(cursor: Cursor, shown: str) -> None:
        try:
            cursor.up()
        except (Moved, OSError):
            raise WorkspaceError(
                f"path {shown} changed while it was being opened; try again"
            ) from None

    @staticmethod
    def _lstat(part: str, dir_fd: int, shown: str) -> os.stat_result:
        try:
            return os.stat(part, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                raise ConfinedRoot._missing(shown) from None
            raise WorkspaceError(f"path {shown} cannot be opened ({reason(exc)})") from None

    @staticmethod
    def _missing(shown: str) -> WorkspaceError:
        return WorkspaceError(f"{shown} does not exist in the workspace; call list_files")

    @staticmethod
    def _retry(retries: int, shown: str) -> int:
        if retries >= MAX_RETRIES:
            raise WorkspaceError(f"path {shown} changed while it was being opened; try again")
        return retries + 1
