"""Bounded file-system access for the workspace tools: read a regular file, walk a tree.

Nothing here can block or run without limit: FIFOs, sockets and devices are refused before
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
from pathlib import Path

from warmloop.errors import WorkspaceError

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
)
_CHUNK_BYTES = 1 << 20


def kind(mode: int) -> str | None:
    """None for a regular file, else what the file is ("a FIFO (named pipe)", ...)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def reason(exc: OSError) -> str:
    """What went wrong, without the file name (which would be an absolute path)."""
    return exc.strerror or type(exc).__name__


def _refuse(shown: str, what: str) -> WorkspaceError:
    return WorkspaceError(
        f"{shown} is {what}, not a regular file; read_file and search only read regular files"
    )


def _too_big(shown: str, size: str, limit: int) -> WorkspaceError:
    return WorkspaceError(
        f"{shown} is {size} bytes, more than the {limit} that read_file and search read; "
        "it cannot be read with these tools"
    )


def read_regular(path: Path, shown: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit`; WorkspaceError for anything else."""
    try:
        what = kind(os.stat(path).st_mode)
        if what is not None:
            raise _refuse(shown, what)
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags)
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


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


class Walk:
    """Regular files under `top` in sorted path order, reading at most `budget` entries.

    Tool-state directories are skipped and symlinked directories are not entered (no loops);
    a symlinked file is yielded only if `inside(target)`, so a listing never hints at outside
    files. FIFOs, sockets and devices are not yielded. After the walk, `stopped` says whether
    the budget ran out; which entries fit in it does not depend on directory order.
    """

    def __init__(self, top: Path, budget: int, inside: Callable[[Path], bool]) -> None:
        self.top = top
        self.left = budget
        self.inside = inside
        self.stopped = False

    def _entries(self, directory: str) -> list[os.DirEntry[str]] | None:
        try:
            with os.scandir(directory) as scan:
                entries = list(itertools.islice(scan, self.left + 1))
        except OSError:
            return []  # unreadable directory: nothing the model can use
        if len(entries) > self.left:
            self.stopped = True
            return None
        self.left -= len(entries)
        return sorted(entries, key=lambda entry: entry.name)

    def __iter__(self) -> Iterator[Path]:
        if _is_regular(str(self.top)):
            yield self.top
            return
        first = self._entries(str(self.top))
        stack = [iter(first or [])]
        while stack and not self.stopped:
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
                continue
            try:
                if entry.is_symlink():
                    path = Path(entry.path)
                    if self.inside(path) and _is_regular(entry.path):
                        yield path
                elif entry.is_dir():
                    if not is_skipped(entry.name):
                        entries = self._entries(entry.path)
                        if entries is not None:
                            stack.append(iter(entries))
                elif entry.is_file():
                    yield Path(entry.path)
            except OSError:
                continue  # the entry vanished or cannot be inspected: skip it
