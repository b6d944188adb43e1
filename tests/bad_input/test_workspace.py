"""Hostile workspaces through the whole loop: `..`, absolute paths, symlinks out and in
loops, FIFOs, /proc, binary and huge sparse files, NUL bytes, long paths, ReDoS patterns.
Each call is a clear tool error or a bounded result, and the saved transcript holds no
absolute workspace path. Rows use the builders of `tests/support/workspace_cases.py` (which also
drive the tool-level tables in test_workspace_hostile.py and its siblings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bad_input.harness import check_outcome, exercise, expect
from tests.support.workspace_cases import (
    Case,
    alias_root,
    both,
    char_device,
    deep_tree,
    hang_guard,
    link,
    many,
    mkfifo,
    remove_tree,
    sparse,
    unix_socket,
    write,
)
from warmloop import Agent, ScriptedModel, call, raw_call
from warmloop.workspace import workspace_tools

EVIL = write("evil.txt", b"a" * 30 + b"!\n")
CAP = 30_000

CASES: dict[str, Case] = {
    "dotdot-read": Case("read_file", {"path": "../secret.txt"}, error="outside the workspace"),
    "dotdot-inside-a-path": Case(
        "read_file", {"path": "sub/../../secret.txt"}, write("sub/x", b""), error="outside"
    ),
    "dotdot-list": Case("list_files", {"path": ".."}, error="outside the workspace"),
    "dotdot-search": Case("search", {"pattern": "needle", "path": ".."}, error="outside"),
    "absolute-outside": Case("read_file", {"path": "/etc/passwd"}, error="outside the workspace"),
    "absolute-proc": Case("read_file", {"path": "/proc/self/environ"}, error="outside"),
    "home-is-not-expanded": Case("read_file", {"path": "~/.ssh/id_rsa"}, error="does not exist"),
    "directory-as-file": Case("read_file", {"path": "."}, error="directory"),
    "empty-path": Case("read_file", {"path": ""}, error="directory"),
    "symlink-out-file": Case(
        "read_file", {"path": "out"}, link("out", "../secret.txt"), error="outside"
    ),
    "symlink-out-dir": Case("list_files", {"path": "up"}, link("up", ".."), error="outside"),
    "symlink-to-proc": Case(
        "read_file", {"path": "env"}, link("env", "/proc/self/environ"), error="outside"
    ),
    "symlink-loop": Case(
        "read_file", {"path": "a"}, both(link("a", "b"), link("b", "a")), error="symlink loop"
    ),
    "symlink-loop-listed": Case("list_files", {}, link("loop", "loop"), hides=("loop",)),
    "symlink-in": Case(
        "read_file", {"path": "in"}, link("in", "README.md"), shows=("needle here",)
    ),
    "workspace-behind-a-symlink": Case(
        "read_file", {"path": "README.md"}, root=alias_root, shows=("needle here",)
    ),
    "fifo": Case("read_file", {"path": "pipe"}, mkfifo("pipe"), error="FIFO"),
    "fifo-searched": Case("search", {"pattern": "needle"}, mkfifo("pipe"), hides=("pipe",)),
    "socket": Case("read_file", {"path": "sock"}, unix_socket, error="socket"),
    "device": Case("read_file", {"path": "zero"}, char_device, error="character device"),
    "proc-as-workspace": Case(
        "read_file", {"path": "status"}, root=lambda tmp: Path("/proc/self"), stable=False
    ),
    "binary-file": Case("read_file", {"path": "b.bin"}, write("b.bin", b"\0\1\2"), error="binary"),
    "sparse-10-gb": Case("read_file", {"path": "huge"}, sparse("huge", 10**10), error="huge"),
    "nul-in-path": Case("read_file", {"path": "README.md\x00.txt"}, error="NUL"),
    "nul-in-pattern": Case("search", {"pattern": "need\x00le"}),
    "long-path": Case("read_file", {"path": "a/" * 3000 + "x"}, error="too long"),
    "long-name": Case("read_file", {"path": "n" * 300}, error="too long"),
    "newline-in-a-name": Case(
        "list_files", {}, write("two\nlines.txt", b"x"), hides=("two\nlines",)
    ),
    "non-utf8-name": Case("list_files", {}, write(b"bad-\xff.txt", b"x"), shows=("bad-",)),
    "redos-nested-quantifier": Case("search", {"pattern": "(a+)+$"}, EVIL),
    "redos-alternation": Case("search", {"pattern": "(a|a)*!x"}, EVIL),
    "regex-invalid": Case("search", {"pattern": "("}, error="invalid regular expression"),
    "regex-backreference": Case("search", {"pattern": "(a)\\1"}, EVIL, error="pattern"),
    "regex-huge": Case("search", {"pattern": "a" * 200_000}, EVIL, error="more than 1000"),
    "deep-tree": Case("list_files", {}, deep_tree(1100)),
    "many-files": Case("list_files", {}, many(3000)),
}


@pytest.fixture
def spellings(tmp_path: Path) -> set[str]:
    """Every way the test's directory may be written in a leaked path."""
    return {str(tmp_path), str(tmp_path.resolve())}


@pytest.mark.parametrize("name", list(CASES))
async def test_hostile_workspace_through_the_loop(
    name: str, tmp_path: Path, spellings: set[str], pytestconfig: pytest.Config
) -> None:
    case = CASES[name]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Title\nneedle here\n")
    (tmp_path / "secret.txt").write_text("needle outside\n")
    case.build(ws)
    root = ws if case.root is None else case.root(tmp_path)
    model = ScriptedModel([raw_call(case.tool, json.dumps(case.args)), call("submit", answer="x")])
    agent = Agent(model, tools=workspace_tools(root), max_result_chars=CAP)
    try:
        with hang_guard(pytestconfig):
            outcome = await exercise(agent)
    finally:
        remove_tree(ws)
    check_outcome(outcome, model=model)
    expect(outcome, "ok")
    result = outcome.results[0]
    assert len(result.content) <= CAP
    assert result.is_error == bool(case.error), result.content[:500]
    assert case.error in result.content
    for wanted in case.shows:
        assert wanted in result.content
    for unwanted in case.hides:
        assert unwanted not in result.content
    assert outcome.transcript is not None
    saved = outcome.transcript.dump()
    for spelling in spellings:
        assert spelling not in saved
        assert json.dumps(spelling)[1:-1] not in saved
