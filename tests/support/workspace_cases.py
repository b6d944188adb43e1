"""Table rows for the workspace tools in hostile places, and the checks every row passes.

A row builds something a real file system can hold and calls one tool through the Toolbox,
as the loop does. `check` then asserts the row's expectation and what holds for all rows: no
absolute root in the text, valid UTF-8 (no lone surrogate), a bounded size, the same bytes on
a second call (the prompt cache depends on it), and no hang.
"""

from __future__ import annotations

import faulthandler
import json
import os
import socket
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import pytest

import warmloop.workspace
from warmloop.messages import ToolCall
from warmloop.tools.toolbox import Toolbox
from warmloop.workspace import workspace_tools

# A hung case ends the test process with every thread's stack instead of hanging the suite;
# it is a liveness guard, far above what any case needs, not a timing assertion.
HANG_GUARD_SECONDS = 120
MAX_ERROR_CHARS = 1_000
MAX_RESULT_CHARS = 30_000


@dataclass(frozen=True)
class Case:
    """One hostile situation: how to build it, the call to make, and what must come back."""

    tool: str
    args: dict[str, object]
    build: Callable[[Path], object] = lambda ws: None
    error: str = ""  # the call must be a tool error containing this
    shows: tuple[str, ...] = ()  # the text must contain each of these
    hides: tuple[str, ...] = ()  # and none of these
    equals: str | None = None  # the whole text, where it is short enough to pin
    limits: dict[str, int] = field(default_factory=dict)  # module limits lowered for the case
    root: Callable[[Path], Path] | None = None  # a workspace other than `ws`
    stable: bool = True  # files whose content changes between calls (/proc) are not


def mkfifo(name: str) -> Callable[[Path], object]:
    return lambda ws: os.mkfifo(ws / name)


def link(name: str, target: str | Path) -> Callable[[Path], object]:
    return lambda ws: (ws / name).symlink_to(target)


def write(name: str | bytes, data: bytes) -> Callable[[Path], object]:
    """A file whose name may be raw bytes (not UTF-8), created with parent directories."""

    def build(ws: Path) -> None:
        path = os.path.join(os.fsencode(ws), os.fsencode(name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as file:
            file.write(data)

    return build


def sparse(name: str, size: int) -> Callable[[Path], object]:
    def build(ws: Path) -> None:
        with open(ws / name, "wb") as file:
            file.truncate(size)

    return build


def both(*builds: Callable[[Path], object]) -> Callable[[Path], object]:
    return lambda ws: [build(ws) for build in builds]


def char_device(ws: Path) -> None:
    try:
        os.mknod(ws / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root")


def unix_socket(ws: Path) -> None:
    old = Path.cwd()
    os.chdir(ws)  # a relative bind keeps the socket path under the 108-byte limit
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind("sock")
    finally:
        os.chdir(old)


def unreadable(ws: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    (ws / "locked.txt").write_text("secret\n")
    (ws / "locked.txt").chmod(0)


def deep_tree(levels: int) -> Callable[[Path], object]:
    def build(ws: Path) -> None:
        path = str(ws)
        for _ in range(levels):
            path += "/d"
            os.mkdir(path)
        Path(path, "deep.txt").write_text("needle at the bottom\n")

    return build


def many(count: int, text: str = "needle\n", directories: bool = False) -> Callable[[Path], object]:
    def build(ws: Path) -> None:
        for n in range(count):
            if directories:
                (ws / f"d{n:03d}").mkdir()
            else:
                (ws / f"f{n:03d}.txt").write_text(text)

    return build


def remove_tree(top: Path) -> None:
    """Delete `top` without recursion: shutil.rmtree (and pytest's cleanup) cannot take the
    trees deeper than Python's recursion limit that some cases build."""
    directories: list[str] = []
    pending = [str(top)]
    while pending:
        directory = pending.pop()
        directories.append(directory)
        for entry in os.scandir(directory):
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                os.unlink(entry.path)
    for directory in reversed(directories):
        os.rmdir(directory)


def alias_root(tmp: Path) -> Path:
    (tmp / "alias").symlink_to(tmp / "ws", target_is_directory=True)
    return tmp / "alias"


@contextmanager
def hang_guard(config: pytest.Config) -> Iterator[None]:
    """End the test process with every thread's stack if the block hangs.

    A runaway regex in Python's re holds the GIL, so no thread and no asyncio timeout can
    interrupt it; faulthandler's watchdog is C code and can. pytest captures fd 2 during a
    test, and its faulthandler plugin keeps the real stderr, so the stacks are seen.
    """
    try:
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        stderr: int | TextIO = config.stash[fault_handler_stderr_fd_key]
    except (ImportError, KeyError):
        stderr = sys.stderr
    faulthandler.dump_traceback_later(HANG_GUARD_SECONDS, exit=True, file=stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


async def call(root: Path, tool: str, args: dict[str, object]) -> tuple[str, bool]:
    """One tool call as the loop makes it: (content, is_error)."""
    toolbox = Toolbox(workspace_tools(root))
    result = await toolbox.execute(ToolCall("call_1_0", tool, json.dumps(args)))
    return result.content, result.is_error


async def check(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: pytest.Config
) -> None:
    """Build `case` in a fresh workspace, call its tool twice, and assert what it promises."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Title\nneedle here\n")
    (tmp_path / "secret.txt").write_text("needle outside\n")
    case.build(ws)
    for name, value in case.limits.items():
        monkeypatch.setattr(warmloop.workspace, name, value)
    root = ws if case.root is None else case.root(tmp_path)
    try:
        with hang_guard(config):
            content, is_error = await call(root, case.tool, case.args)
            again = await call(root, case.tool, case.args)
    finally:
        remove_tree(ws)

    assert is_error == bool(case.error), content[:2000]
    assert case.error in content
    for wanted in case.shows:
        assert wanted in content, content[:2000]
    for unwanted in case.hides:
        assert unwanted not in content
    assert case.equals is None or content == case.equals
    for spelling in {str(root.absolute()), str(root.resolve()), str(tmp_path)} - {"/dev"}:
        assert spelling not in content
    content.encode("utf-8")  # strict: a lone surrogate would raise here, as saving would
    assert len(content) <= (MAX_ERROR_CHARS if is_error else MAX_RESULT_CHARS)
    if case.stable:
        assert again == (content, is_error)
