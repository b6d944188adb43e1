"""Security cases: inputs, and races, that try to make a tool reach what it must not.

Each section is one table and its own test functions, so sections can grow apart.
"""

from __future__ import annotations

import ctypes
import errno
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import warmloop.workspace
from tests.workspace_cases import Case, both, check, hang_guard, link, write
from warmloop.errors import WorkspaceError
from warmloop.workspace import workspace_tools
from warmloop.workspace.files import read_regular

# --- Workspace: no path, link or race leads a tool out of its root ------------------------
#
# A race swaps something inside the workspace for a symlink to its twin outside and back, as
# fast as a thread can, while the test calls the real tool WORKSPACE_ROUNDS times. Checking
# a path and then opening it by name let 13 to 1,221 of 5,000 calls per case reach the
# outside twin; opening each component under the directory before it, never following a
# link, lets none. Static cases build links that leave the root by longer ways than the
# hostile tables (tests/test_workspace_hostile.py) try, and freeze a race at its bad moment.

WORKSPACE_ROUNDS = 5_000
OUTSIDE_SECRET = "OUTSIDE-SECRET-5f2a"
OUTSIDE_ONLY = "only-outside.txt"  # a name only the outside twin of a directory holds
WORKSPACE_LIVENESS_SECONDS = 120.0
"""A guard against a swapper thread that never gets going, not a timing assertion."""
AT_FDCWD = -100
RENAME_EXCHANGE = 2  # linux/fs.h


@dataclass(frozen=True)
class WorkspaceRace:
    """`tool(**args)` called `rounds` times while `swapped`, a directory or file in the
    workspace, is swapped for a symlink to its twin outside (`relative`: by a `../` target)."""

    tool: str
    args: dict[str, object]
    swapped: str
    relative: bool = False
    rounds: int = WORKSPACE_ROUNDS


@dataclass(frozen=True)
class WorkspaceMove:
    """`tool(**args)` where the directory `moved` leaves the workspace for `to` (under the
    test's directory, which holds the outside secrets) the moment the tool first reads a file
    in it: the walk stands inside it then, and must not climb back up into `to`'s parent."""

    tool: str
    args: dict[str, object]
    moved: str
    to: str


def workspace_twins(tmp: Path) -> Path:
    """A workspace and, beside it in `outside/`, the same tree holding secrets; the workspace."""
    ws = tmp / "ws"
    for top, text in ((ws, "needle inside\n"), (tmp / "outside", f"needle {OUTSIDE_SECRET}\n")):
        for name in ("dir/secret.txt", "a/b/secret.txt"):
            (top / name).parent.mkdir(parents=True, exist_ok=True)
            (top / name).write_text(text)
    (ws / "README.md").write_text("# Title\nneedle here\n")
    (tmp / "outside" / "dir" / OUTSIDE_ONLY).write_text(f"{OUTSIDE_SECRET}\n")
    return ws


def exchange_call() -> Callable[[bytes, bytes], None] | None:
    """libc's renameat2(RENAME_EXCHANGE), which swaps two names in one step; None without it."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None

    def exchange(a: bytes, b: bytes) -> None:
        if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error))

    return exchange


class Swapper:
    """A thread that swaps `path` for a symlink to `target` and back until stopped.

    Where the file system can, the link waits at `spare` and each swap is one atomic exchange,
    so `path` is always the real thing or the link (a tighter race than four renames, which
    leave `path` missing half the time); elsewhere, the four renames.
    """

    def __init__(self, path: Path, target: str, spare: Path) -> None:
        self.path, self.target, self.spare = str(path), target, str(spare)
        self.stop = threading.Event()
        self.started = threading.Event()
        self.swaps = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        try:
            exchange = exchange_call()
            if exchange is not None:
                os.symlink(self.target, self.spare)
                try:
                    exchange(self.path.encode(), self.spare.encode())
                except OSError as exc:
                    if exc.errno not in (errno.EINVAL, errno.ENOSYS):
                        raise
                    exchange = None  # a file system without RENAME_EXCHANGE
                    os.unlink(self.spare)
                else:
                    exchange(self.path.encode(), self.spare.encode())
            if exchange is not None:
                self.exchanges(exchange)
            else:
                self.renames()
        except BaseException as exc:  # seen by the test, which would otherwise pass vacuously
            self.error = exc
            self.started.set()

    def exchanges(self, exchange: Callable[[bytes, bytes], None]) -> None:
        path, spare = self.path.encode(), self.spare.encode()
        while not self.stop.is_set():
            exchange(path, spare)
            exchange(path, spare)
            self.swaps += 1
            self.started.set()

    def renames(self) -> None:
        away = self.spare + ".away"
        while not self.stop.is_set():
            os.rename(self.path, away)
            os.symlink(self.target, self.path)
            os.unlink(self.path)
            os.rename(away, self.path)
            self.swaps += 1
            self.started.set()


@contextmanager
def swapping(path: Path, target: str, spare: Path) -> Iterator[Swapper]:
    """`path` swapped back and forth while the block runs (and restored when it ends)."""
    swapper = Swapper(path, target, spare)
    swapper.thread.start()
    try:
        assert swapper.started.wait(WORKSPACE_LIVENESS_SECONDS), "the swapper never swapped"
        yield swapper
    finally:
        swapper.stop.set()
        swapper.thread.join()
    if swapper.error is not None:
        raise swapper.error


def moved_mid_walk(tmp: Path) -> Path:
    """A workspace with a/b/f.txt and a/z.txt; outside/ holds a z.txt with the secret."""
    ws = tmp / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "f.txt").write_text("needle inside\n")
    (ws / "a" / "z.txt").write_text("needle inside\n")
    (tmp / "outside").mkdir()
    (tmp / "outside" / "z.txt").write_text(f"needle {OUTSIDE_SECRET}\n")
    return ws


def absolute_link_back_through(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "l").symlink_to(f"{ws}/sub/../../secret.txt")


def linked_directory(ws: Path) -> None:
    (ws / "sub" / "inner").mkdir(parents=True)
    (ws / "d").symlink_to("sub/inner", target_is_directory=True)


def through_proc_root(ws: Path) -> None:
    (ws / "l").symlink_to(f"/proc/self/root{ws.parent}/secret.txt")


def absolute_link_to_the_root(ws: Path) -> None:
    (ws / "home").symlink_to(ws, target_is_directory=True)


def swap_for_a_link_out(ws: Path) -> None:
    # What the races do, frozen at the bad moment: the directory is a link out.
    (ws / "dir").symlink_to(ws.parent / "outside", target_is_directory=True)
    (ws.parent / "outside").mkdir()
    (ws.parent / "outside" / "secret.txt").write_text(f"{OUTSIDE_SECRET}\n")


WORKSPACE_CASES: dict[str, WorkspaceRace | WorkspaceMove | Case] = {
    "race-read-through-a-swapped-directory": WorkspaceRace(
        "read_file", {"path": "dir/secret.txt"}, "dir"
    ),
    "race-read-through-a-swapped-directory-relative-link": WorkspaceRace(
        "read_file", {"path": "dir/secret.txt"}, "dir", relative=True
    ),
    "race-read-through-a-swapped-deeper-directory": WorkspaceRace(
        "read_file", {"path": "a/b/secret.txt"}, "a/b"
    ),
    # Its window (between the file's lstat and its open) is the narrowest: more rounds.
    "race-read-of-a-swapped-file": WorkspaceRace(
        "read_file", {"path": "dir/secret.txt"}, "dir/secret.txt", rounds=20_000
    ),
    "race-list-a-swapped-directory": WorkspaceRace("list_files", {"path": "dir"}, "dir"),
    "race-search-a-tree-with-a-swapped-directory": WorkspaceRace(
        "search", {"pattern": "needle"}, "dir"
    ),
    "race-search-in-a-swapped-directory": WorkspaceRace(
        "search", {"pattern": "needle", "path": "dir"}, "dir"
    ),
    "move-out-of-a-directory-being-searched": WorkspaceMove(
        "search", {"pattern": "needle"}, moved="a/b", to="outside/b"
    ),
    "move-out-of-a-directory-being-searched-by-path": WorkspaceMove(
        "search", {"pattern": "needle", "path": "a"}, moved="a/b", to="outside/b"
    ),
    "frozen-swap-read": Case(
        "read_file", {"path": "dir/secret.txt"}, swap_for_a_link_out, error="outside the workspace"
    ),
    "frozen-swap-list": Case(
        "list_files", {"path": "dir"}, swap_for_a_link_out, error="outside the workspace"
    ),
    "frozen-swap-search": Case(
        "search", {"pattern": "."}, swap_for_a_link_out, hides=(OUTSIDE_SECRET, "dir/")
    ),
    "link-chain-leaves-on-the-second-hop": Case(
        "read_file",
        {"path": "a"},
        both(link("a", "b"), link("b", "../secret.txt")),
        error="outside the workspace",
    ),
    "link-deep-inside-climbs-out": Case(
        "read_file",
        {"path": "s/t/l"},
        both(write("s/t/x", b""), link("s/t/l", "../../../secret.txt")),
        error="outside the workspace",
    ),
    "absolute-link-into-the-root-then-up-and-out": Case(
        "read_file", {"path": "l"}, absolute_link_back_through, error="outside the workspace"
    ),
    "dotdot-after-a-linked-directory-climbs-out": Case(
        "read_file", {"path": "d/../../../secret.txt"}, linked_directory, error="outside"
    ),
    "dotdot-after-a-linked-directory-stays-in": Case(
        "read_file",
        {"path": "d/../../README.md"},
        linked_directory,
        shows=("README.md: lines 1-2 of 2",),
    ),
    "link-through-proc-self-root": Case(
        "read_file", {"path": "l"}, through_proc_root, error="outside the workspace"
    ),
    "absolute-link-back-to-the-root": Case(
        "read_file",
        {"path": "home/home/README.md"},
        absolute_link_to_the_root,
        shows=("README.md: lines 1-2 of 2",),
    ),
    "dotdot-past-the-root-from-a-link-target": Case(
        "list_files", {"path": "up/up"}, link("up", ".."), error="outside the workspace"
    ),
}


def _named(kind: type) -> list[str]:
    return [name for name, case in WORKSPACE_CASES.items() if isinstance(case, kind)]


@pytest.mark.parametrize("name", _named(WorkspaceRace))
def test_workspace_race_never_reads_outside(
    name: str, tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    race = WORKSPACE_CASES[name]
    assert isinstance(race, WorkspaceRace)
    ws = workspace_twins(tmp_path)
    twin = tmp_path / "outside" / race.swapped
    target = os.path.relpath(twin, (ws / race.swapped).parent) if race.relative else str(twin)
    tool = {t.name: t for t in workspace_tools(ws)}[race.tool]
    escapes: list[str] = []
    refusals = 0
    with (
        hang_guard(pytestconfig),
        swapping(ws / race.swapped, target, tmp_path / "spare") as swapper,
    ):
        for _ in range(race.rounds):
            try:
                content = tool.function(**race.args)
            except WorkspaceError:
                refusals += 1  # refusing is always safe; which calls refuse depends on timing
                continue
            assert isinstance(content, str)
            if OUTSIDE_SECRET in content or OUTSIDE_ONLY in content:
                escapes.append(content)
    assert swapper.swaps > 0
    assert not escapes, (
        f"{len(escapes)} of {race.rounds} calls reached outside the workspace "
        f"({refusals} refused), e.g. {escapes[0][:200]!r}"
    )


@pytest.mark.parametrize("name", _named(WorkspaceMove))
def test_workspace_directory_moved_out_mid_walk_is_left(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    move = WORKSPACE_CASES[name]
    assert isinstance(move, WorkspaceMove)
    ws = moved_mid_walk(tmp_path)
    tool = {t.name: t for t in workspace_tools(ws)}[move.tool]
    moves = 0

    def read_then_move(dir_fd: int, file: str, shown: str, limit: int) -> bytes:
        nonlocal moves
        data = read_regular(dir_fd, file, shown, limit)
        if shown.startswith(move.moved + "/") and not moves:
            os.rename(ws / move.moved, tmp_path / move.to)
            moves += 1
        return data

    monkeypatch.setattr(warmloop.workspace, "read_regular", read_then_move)
    content = tool.function(**move.args)
    assert isinstance(content, str)
    assert moves == 1
    assert OUTSIDE_SECRET not in content, content


@pytest.mark.parametrize("name", _named(Case))
async def test_workspace_link_never_leads_outside(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    case = WORKSPACE_CASES[name]
    assert isinstance(case, Case)
    await check(case, tmp_path, monkeypatch, pytestconfig)
