"""`ConfinedRoot.locate` at its limits: a component that keeps changing is given up on
after `MAX_RETRIES` looks, a link swapped for a file mid-walk is looked at again (never
taken for its directory), and exactly `MAX_LINKS` links are followed in one path."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from warmloop.errors import WorkspaceError
from warmloop.workspace.confined import MAX_LINKS, MAX_RETRIES, ConfinedRoot, Cursor


def root_of(path: Path) -> ConfinedRoot:
    real = path.resolve()
    return ConfinedRoot(real, [str(real)])


def test_a_component_swapped_again_and_again_is_given_up_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b.txt").write_text("b\n")
    tries = 0

    def swapped(self: Cursor, name: str) -> None:  # a link again each time it is opened
        nonlocal tries
        tries += 1
        assert tries <= 10 * MAX_RETRIES, "locate never gave up"
        raise OSError(errno.ELOOP, "Too many levels of symbolic links")

    monkeypatch.setattr(Cursor, "down", swapped)
    with pytest.raises(WorkspaceError, match="changed while it was being opened"):
        root_of(tmp_path).locate("a/b.txt", "'a/b.txt'")
    assert tries == MAX_RETRIES + 1


def test_a_link_swapped_for_a_file_while_it_is_read_is_looked_at_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "c.txt").write_text("c\n")
    (tmp_path / "a" / "b.txt").symlink_to("c.txt")
    readlink = os.readlink
    swaps = 0

    def racing(path: str, *, dir_fd: int | None = None) -> str:
        nonlocal swaps
        if swaps == 0:  # between the lstat and the readlink, the link becomes a file
            swaps += 1
            os.unlink(path, dir_fd=dir_fd)
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, dir_fd=dir_fd), "w") as out:
                out.write("b\n")
            raise OSError(errno.EINVAL, "Invalid argument")
        return readlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "readlink", racing)  # the walk reads links through os
    with root_of(tmp_path).locate("a/b.txt", "'a/b.txt'") as place:
        assert swaps == 1
        assert (place.parts, place.name) == (("a", "b.txt"), "b.txt")
        assert stat.S_ISREG(place.info.st_mode)


def test_exactly_max_links_are_followed_in_one_path(tmp_path: Path) -> None:
    (tmp_path / "end.txt").write_text("end\n")
    (tmp_path / f"l{MAX_LINKS}").symlink_to("end.txt")
    for n in range(MAX_LINKS):
        (tmp_path / f"l{n}").symlink_to(f"l{n + 1}")
    root = root_of(tmp_path)
    with root.locate("l1", "'l1'") as place:  # l1 .. l40: 40 links
        assert place.parts == ("end.txt",)
    with pytest.raises(WorkspaceError, match="symlink loop"):
        root.locate("l0", "'l0'")  # 41 links
