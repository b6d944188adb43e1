"""Workspace tools: confined to the root, deterministic, and clear when refusing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warmloop.errors import ConfigurationError, WorkspaceError
from warmloop.messages import ToolCall
from warmloop.tools.toolbox import Toolbox
from warmloop.workspace import (
    MAX_LISTED_FILES,
    MAX_READ_LINES,
    MAX_SEARCH_MATCHES,
    Workspace,
    workspace_tools,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with a nested package, a binary file and tool-state directories."""
    ws = tmp_path / "ws"
    (ws / "pkg" / "sub").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / "__pycache__").mkdir()
    (ws / "README.md").write_text("# Title\nhello world\n")
    (ws / "pkg" / "a.py").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (ws / "pkg" / "sub" / "b.txt").write_text("needle here\nno match\nneedle again\n")
    (ws / "zeta.cfg").write_text("key = value\n")
    (ws / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0rest")
    (ws / ".git" / "config").write_text("needle in git\n")
    (ws / "__pycache__" / "a.pyc").write_bytes(b"needle\0")
    (tmp_path / "secret.txt").write_text("needle outside\n")
    return ws


async def run_tool(root: Path, name: str, **arguments: object) -> tuple[str, bool]:
    """Execute one workspace tool call as the loop would; (content, is_error)."""
    toolbox = Toolbox(workspace_tools(root))
    result = await toolbox.execute(ToolCall("call_1_0", name, json.dumps(arguments)))
    return result.content, result.is_error


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        workspace_tools(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="not a directory"):
        workspace_tools(tmp_path / "file")


@pytest.mark.parametrize("path", ["..", "../secret.txt", "pkg/../../secret.txt"])
def test_parent_paths_are_refused(root: Path, path: str) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        Workspace(root).resolve(path)


def test_absolute_path_elsewhere_is_refused(root: Path) -> None:
    outside = str(root.parent / "secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        Workspace(root).resolve(outside)


def test_absolute_path_inside_is_allowed(root: Path) -> None:
    assert Workspace(root).resolve(str(root / "README.md")) == (root / "README.md").resolve()


async def test_symlink_pointing_out_is_refused_and_not_listed(root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "secret.txt")
    (root / "linkdir").symlink_to(root.parent, target_is_directory=True)
    content, is_error = await run_tool(root, "read_file", path="link.txt")
    assert is_error
    assert "outside the workspace" in content
    content, is_error = await run_tool(root, "read_file", path="linkdir/secret.txt")
    assert is_error
    assert "outside the workspace" in content
    listing, _ = await run_tool(root, "list_files")
    assert "link" not in listing
    found, _ = await run_tool(root, "search", pattern="needle")
    assert "outside" not in found


async def test_symlink_inside_the_workspace_is_readable(root: Path) -> None:
    (root / "alias.md").symlink_to(root / "README.md")
    content, is_error = await run_tool(root, "read_file", path="alias.md")
    assert not is_error
    assert "hello world" in content
    listing, _ = await run_tool(root, "list_files")
    assert "alias.md" in listing.splitlines()


async def test_errors_never_show_the_absolute_root(root: Path) -> None:
    (root / "dangling").symlink_to(root / "gone")
    for name, args in [
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": "nope.txt"}),
        ("read_file", {"path": "dangling"}),
        ("read_file", {"path": "bad\0name"}),
        ("list_files", {"path": "/"}),
    ]:
        content, is_error = await run_tool(root, name, **args)
        assert is_error, (name, args, content)
        assert str(root) not in content


async def test_listing_is_sorted_relative_and_skips_tool_state(root: Path) -> None:
    listing, is_error = await run_tool(root, "list_files")
    assert not is_error
    assert listing.splitlines() == [
        "README.md",
        "blob.bin",
        "pkg/a.py",
        "pkg/sub/b.txt",
        "zeta.cfg",
    ]
    sub, _ = await run_tool(root, "list_files", path="pkg/sub")
    assert sub == "pkg/sub/b.txt"


async def test_listing_does_not_depend_on_creation_order(tmp_path: Path) -> None:
    names = ["m.txt", "b.txt", "a/z.txt", "a/c.txt", "Z.txt"]
    listings = []
    for n, order in enumerate([names, list(reversed(names))]):
        ws = tmp_path / f"ws{n}"
        for name in order:
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            (ws / name).write_text(name)
        listings.append((await run_tool(ws, "list_files"))[0])
    assert listings[0] == listings[1]
    assert listings[0].splitlines() == ["Z.txt", "a/c.txt", "a/z.txt", "b.txt", "m.txt"]


def test_listing_is_capped_with_a_hint(tmp_path: Path) -> None:
    for n in range(MAX_LISTED_FILES + 3):
        (tmp_path / f"f{n:04d}.txt").write_text("x")
    lines = Workspace(tmp_path).list_files().splitlines()
    assert len(lines) == MAX_LISTED_FILES + 1
    assert lines[-1].startswith(f"[listing stopped at {MAX_LISTED_FILES} files")


async def test_read_file_numbers_lines(root: Path) -> None:
    content, is_error = await run_tool(root, "read_file", path="README.md")
    assert not is_error
    assert content == "README.md: lines 1-2 of 2\n1 | # Title\n2 | hello world"


async def test_read_file_line_range(root: Path) -> None:
    content, _ = await run_tool(root, "read_file", path="pkg/a.py", start_line=9, end_line=10)
    assert content == "pkg/a.py: lines 9-10 of 10\n 9 | line 9\n10 | line 10"
    tail, _ = await run_tool(root, "read_file", path="pkg/a.py", start_line=8, end_line=99)
    assert tail.splitlines()[0] == "pkg/a.py: lines 8-10 of 10"
    head, _ = await run_tool(root, "read_file", path="pkg/a.py", end_line=2)
    assert head.splitlines()[1:] == ["1 | line 1", "2 | line 2"]


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [(0, None, "numbered from 1"), (5, 4, "must not be before"), (11, None, "past the end")],
)
async def test_bad_line_ranges_are_tool_errors(
    root: Path, start: int, end: int | None, message: str
) -> None:
    content, is_error = await run_tool(
        root, "read_file", path="pkg/a.py", start_line=start, end_line=end
    )
    assert is_error
    assert message in content


def test_long_files_are_read_in_pages(tmp_path: Path) -> None:
    total = MAX_READ_LINES + 50
    (tmp_path / "long.txt").write_text("".join(f"{n}\n" for n in range(1, total + 1)))
    page = Workspace(tmp_path).read_file("long.txt").splitlines()
    assert page[0] == f"long.txt: lines 1-{MAX_READ_LINES} of {total}"
    assert page[-1].endswith(f"read on with start_line={MAX_READ_LINES + 1}]")
    rest = Workspace(tmp_path).read_file("long.txt", start_line=MAX_READ_LINES + 1)
    assert rest.splitlines()[-1] == f"{total} | {total}"


async def test_binary_and_directory_reads_are_refused_politely(root: Path) -> None:
    content, is_error = await run_tool(root, "read_file", path="blob.bin")
    assert is_error
    assert "blob.bin is a binary file" in content
    content, is_error = await run_tool(root, "read_file", path="pkg")
    assert is_error
    assert "pkg is a directory; use list_files" in content


async def test_missing_file_names_what_to_do(root: Path) -> None:
    content, is_error = await run_tool(root, "read_file", path="nope.txt")
    assert is_error
    assert "'nope.txt' does not exist" in content
    assert "list_files" in content


async def test_search_reports_path_and_line(root: Path) -> None:
    content, is_error = await run_tool(root, "search", pattern=r"needle \w+")
    assert not is_error
    # .git, __pycache__, the binary file and files outside the root are not searched.
    assert content.splitlines() == [
        "pkg/sub/b.txt:1: needle here",
        "pkg/sub/b.txt:3: needle again",
        '[the lines around a match: read_file {"path": "pkg/sub/b.txt", "start_line": 1, '
        '"end_line": 11}]',
    ]
    scoped, _ = await run_tool(root, "search", pattern="line 1$", path="pkg/a.py")
    assert scoped.splitlines()[0] == "pkg/a.py:1: line 1"


async def test_search_without_matches_says_so(root: Path) -> None:
    content, is_error = await run_tool(root, "search", pattern="absent", path="pkg")
    assert not is_error
    assert content == "no matches for 'absent' under pkg"


async def test_bad_regex_is_a_clear_tool_error(root: Path) -> None:
    content, is_error = await run_tool(root, "search", pattern="needle(")
    assert is_error
    assert "invalid regular expression 'needle('" in content
    assert "escape special characters" in content


def test_search_is_capped(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * (MAX_SEARCH_MATCHES + 5))
    lines = Workspace(tmp_path).search("hit").splitlines()
    assert len(lines) == MAX_SEARCH_MATCHES + 2  # and the read around the first
    assert lines[-1].startswith(f"[stopped at {MAX_SEARCH_MATCHES} matches")


def test_tool_specs_do_not_mention_the_root(root: Path) -> None:
    specs = json.dumps([t.spec.full() for t in workspace_tools(root)])
    assert str(root) not in specs
    assert [t.name for t in workspace_tools(root)] == [
        "list_files",
        "read_file",
        "search",
        "find_definition",
    ]


def test_example_workspace_is_explorable() -> None:
    ws = Workspace(EXAMPLE)
    files = ws.list_files().splitlines()
    assert "inventory/stock.py" in files
    assert "README.md" in files
    assert "config.toml:7: threshold = 5" in ws.search(r"threshold\s*=").splitlines()
