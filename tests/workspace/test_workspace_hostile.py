"""Hostile workspaces: every case a clear tool error or a bounded result, never a hang.

FIFOs, sockets and devices, /proc files, symlink loops and links out and in, binary and
sparse giants, NUL bytes and very long paths, trees deeper than Python's recursion limit,
budgets on huge trees, and patterns that backtrack catastrophically in Python's re. The
checks every row passes are in `tests/support/workspace_cases.py`; file names are in
`test_workspace_names.py`, patterns in `test_workspace_search.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.workspace_cases import (
    Case,
    alias_root,
    both,
    char_device,
    check,
    deep_tree,
    link,
    many,
    mkfifo,
    sparse,
    unix_socket,
    unreadable,
    write,
)

DEEP = "d/" * 1100
SPARSE_SIZE = 10_000_000_000
REDOS_FILE = write("evil.txt", b"a" * 30 + b"!\n")  # 31 bytes hung Python's re for good

CASES: dict[str, Case] = {
    # FIFOs, sockets and devices: refused before they are opened, never listed or searched.
    "fifo-read": Case("read_file", {"path": "pipe"}, mkfifo("pipe"), error="pipe is a FIFO"),
    "fifo-via-symlink": Case(
        "read_file",
        {"path": "to-pipe"},
        both(mkfifo("pipe"), link("to-pipe", "pipe")),
        error="pipe is a FIFO",
    ),
    "fifo-not-listed": Case(
        "list_files", {}, mkfifo("pipe"), shows=("README.md",), hides=("pipe",)
    ),
    "fifo-skipped-by-search": Case(
        "search", {"pattern": "needle"}, mkfifo("pipe"), shows=("README.md:2: needle",)
    ),
    "fifo-as-list-path": Case("list_files", {"path": "pipe"}, mkfifo("pipe"), error="is a FIFO"),
    "socket-read": Case("read_file", {"path": "sock"}, unix_socket, error="sock is a socket"),
    "device-node-read": Case(
        "read_file", {"path": "zero"}, char_device, error="zero is a character device"
    ),
    "device-node-search": Case(
        "search", {"pattern": "needle"}, char_device, shows=("README.md:2:",), hides=("zero",)
    ),
    "dev-zero-through-symlink": Case(
        "read_file", {"path": "zero"}, link("zero", "/dev/zero"), error="outside the workspace"
    ),
    "dev-as-the-workspace": Case(
        "read_file", {"path": "zero"}, root=lambda tmp: Path("/dev"), error="is a character device"
    ),
    # /proc files report size 0 and produce data: read up to the limit, not without one.
    "proc-file-reads": Case(
        "read_file",
        {"path": "status"},
        root=lambda tmp: Path("/proc/self"),
        shows=("status: lines 1-", "| Name:"),
        stable=False,
    ),
    "proc-file-over-the-limit": Case(
        "read_file",
        {"path": "status"},
        root=lambda tmp: Path("/proc/self"),
        limits={"MAX_FILE_BYTES": 100},
        error="more than the 100",
    ),
    "proc-file-searched": Case(
        "search",
        {"pattern": "^Name:", "path": "status"},
        root=lambda tmp: Path("/proc/self"),
        shows=("status:1: Name:",),
        stable=False,
    ),
    "unreadable-file": Case(
        "read_file", {"path": "locked.txt"}, unreadable, error="cannot be read (Permission"
    ),
    # Symlinks: loops are errors or skipped, links out are refused, links in are followed.
    "symlink-loop-self": Case(
        "read_file", {"path": "loop"}, link("loop", "loop"), error="symlink loop"
    ),
    "symlink-loop-pair": Case(
        "read_file", {"path": "a"}, both(link("a", "b"), link("b", "a")), error="symlink loop"
    ),
    "symlink-loop-not-listed": Case(
        "list_files", {}, link("loop", "loop"), shows=("README.md",), hides=("loop",)
    ),
    "directory-loop-listed-once": Case(
        "list_files",
        {},
        both(write("sub/f.txt", b"x\n"), link("sub/up", "..")),
        shows=("sub/f.txt",),
        hides=("sub/up",),
    ),
    "directory-loop-searched-once": Case(
        "search", {"pattern": "needle"}, link("up", "."), shows=("README.md:2:",), hides=("up/",)
    ),
    "directory-loop-read-through": Case(
        "read_file", {"path": "up/up/up/README.md"}, link("up", "."), shows=("README.md: lines",)
    ),
    "link-out-to-a-file": Case(
        "read_file", {"path": "out"}, link("out", "../secret.txt"), error="outside the workspace"
    ),
    "link-out-to-a-directory": Case(
        "read_file", {"path": "up/secret.txt"}, link("up", ".."), error="outside the workspace"
    ),
    "link-in-is-followed": Case(
        "read_file",
        {"path": "docs/readme"},
        both(write("docs/x.txt", b""), link("docs/readme", "../README.md")),
        shows=("README.md: lines 1-2 of 2",),
    ),
    "link-in-is-searched": Case(
        "search",
        {"pattern": "needle", "path": "docs"},
        both(write("docs/x.txt", b""), link("docs/readme", "../README.md")),
        shows=("docs/readme:2: needle here\n",),
    ),
    "link-out-and-back-in": Case(
        "read_file", {"path": "back"}, link("back", "../ws/README.md"), shows=("README.md: lines",)
    ),
    "dangling-link": Case(
        "read_file", {"path": "gone"}, link("gone", "nowhere"), error="does not exist"
    ),
    "root-reached-through-a-symlink": Case(
        "read_file", {"path": "../alias/nope.txt"}, root=alias_root, error="does not exist"
    ),
    # Binary, sparse and huge files.
    "binary-read": Case(
        "read_file", {"path": "b.bin"}, write("b.bin", b"\0\1\2"), error="binary file"
    ),
    "binary-not-searched": Case(
        "search", {"pattern": "needle"}, write("b.bin", b"needle\0"), hides=("b.bin",)
    ),
    "sparse-giant-read": Case(
        "read_file",
        {"path": "huge"},
        sparse("huge", SPARSE_SIZE),
        error=f"huge is {SPARSE_SIZE} bytes, more than",
    ),
    "sparse-giant-listed": Case("list_files", {}, sparse("huge", SPARSE_SIZE), shows=("huge",)),
    "sparse-giant-not-searched": Case(  # not read, and named as not searched (issue 19)
        "search",
        {"pattern": "x*"},
        sparse("huge", SPARSE_SIZE),
        shows=("[not searched: 1 file(s) too big", ": huge;"),
    ),
    "sparse-zeros-are-binary": Case(
        "read_file", {"path": "z"}, sparse("z", 1_000_000), error="binary file"
    ),
    "over-the-file-limit": Case(
        "read_file", {"path": "README.md"}, limits={"MAX_FILE_BYTES": 10}, error="more than the 10"
    ),
    "invalid-utf8-content": Case(
        "read_file", {"path": "l1.txt"}, write("l1.txt", b"caf\xe9\n"), shows=("1 | caf\ufffd",)
    ),
    # NUL bytes and very long paths.
    "nul-in-read-path": Case("read_file", {"path": "bad\0name"}, error="NUL character"),
    "nul-in-list-path": Case("list_files", {"path": "pkg\0"}, error="NUL character"),
    "nul-in-search-path": Case("search", {"pattern": "x", "path": "\0"}, error="NUL character"),
    "overlong-name": Case("read_file", {"path": "a" * 300}, error="File name too long"),
    "overlong-path": Case("read_file", {"path": "a/" * 3000}, error="File name too long"),
    "megabyte-path": Case("list_files", {"path": "p" * 1_000_000}, error="File name too long"),
    "tree-deeper-than-recursion": Case(
        "list_files", {}, deep_tree(1100), shows=(f"{DEEP}deep.txt",)
    ),
    "tree-deeper-than-recursion-searched": Case(
        "search", {"pattern": "bottom"}, deep_tree(1100), shows=(f"{DEEP}deep.txt:1:",)
    ),
    # Budgets: a huge tree or corpus stops with a note, never hangs the loop.
    "walk-budget-in-listing": Case(
        "list_files",
        {},
        many(60, directories=True),
        limits={"MAX_WALK_ENTRIES": 50},
        shows=("[listing stopped after 50 directory entries",),
    ),
    "walk-budget-in-search": Case(
        "search",
        {"pattern": "needle"},
        many(60),
        limits={"MAX_WALK_ENTRIES": 50},
        shows=("[search stopped after 50 directory entries",),
    ),
    "search-file-budget": Case(
        "search",
        {"pattern": "needle"},
        many(10),
        limits={"MAX_SEARCH_FILES": 3},
        shows=("[search stopped after reading 3 files",),
        hides=("f002",),
    ),
    "search-byte-budget": Case(
        "search",
        {"pattern": "needle"},
        many(10, "needle\n" * 10),
        limits={"MAX_SEARCH_BYTES": 100},
        shows=("[search stopped after reading 3 files (160 bytes)",),
        hides=("f002",),
    ),
    # Patterns that backtrack catastrophically in Python's re: RE2 answers at once.
    "redos-nested-plus": Case("search", {"pattern": "(a+)+$"}, REDOS_FILE, shows=("no matches",)),
    "redos-alternation": Case("search", {"pattern": "(a|aa)+$"}, REDOS_FILE, shows=("no matches",)),
    "redos-overlapping-star": Case(
        "search", {"pattern": "(a|a)*b"}, REDOS_FILE, shows=("no matches",)
    ),
    "redos-words": Case(
        "search", {"pattern": r"^(\w+\s?)*$"}, REDOS_FILE, shows=("README.md:2:",), hides=("evil",)
    ),
    "redos-counted": Case("search", {"pattern": "(.*a){20}$"}, REDOS_FILE, shows=("no matches",)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_hostile_workspace_gives_a_clear_error_or_a_bounded_result(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    await check(case, tmp_path, monkeypatch, pytestconfig)


async def test_absolute_paths_the_model_quotes_back_are_echoed_without_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    absolute = str(tmp_path / "ws" / "nope.txt")
    case = Case("read_file", {"path": absolute}, error="'<workspace>/nope.txt' does not exist")
    await check(case, tmp_path, monkeypatch, pytestconfig)
