"""`Cursor.close` twice (issue 49): `ConfinedRoot.locate` closes its cursor in a `finally`
after a walk may have closed it already (a link to an absolute path, `..` above the root:
the walk starts again on a fresh cursor, and opening that one can fail). A second close
must close nothing: by then the descriptor's number may belong to a file opened since, in
this thread or another, and closing it would cut that file from under its owner."""

from __future__ import annotations

import os
from pathlib import Path

from warmloop.workspace.confined import WALK_THROUGH, ConfinedRoot, Cursor


def test_a_cursor_closed_twice_leaves_a_file_that_took_its_number_open(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("kept open\n")
    cursor = Cursor(os.open(tmp_path, WALK_THROUGH), WALK_THROUGH)
    number = cursor.fd
    cursor.close()
    reused = os.open(tmp_path / "notes.txt", os.O_RDONLY)  # the lowest free number: the same
    try:
        assert reused == number
        cursor.close()
        assert os.read(reused, 100) == b"kept open\n"
    finally:
        os.close(reused)


def test_a_walk_that_starts_again_at_the_root_leaves_no_descriptor_open(tmp_path: Path) -> None:
    """A link to an absolute path under the root: the walk closes its cursor and starts
    again on a fresh one, whose descriptor the place takes; once the place is closed,
    every descriptor the walk opened is closed."""
    real = tmp_path.resolve()
    (real / "docs").mkdir()
    (real / "docs" / "guide.md").write_text("# Guide\n")
    (real / "latest").symlink_to(real / "docs")
    root = ConfinedRoot(real, [str(real)])
    before = sorted(os.listdir("/proc/self/fd"))
    with root.locate("latest/guide.md", "'latest/guide.md'") as place:
        assert place.parts == ("docs", "guide.md")
    assert sorted(os.listdir("/proc/self/fd")) == before
