"""The PostgreSQL server the store and fleet tests share: without $WARMLOOP_TEST_POSTGRES,
scripts/postgres.sh is run once per test session, and what it gave (a URL, or why no server
could be started) is what every later test gets, not one more start or install per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import stores


def counting_script(tmp_path: Path, *, prints: str, exits: int) -> Path:
    """A stand-in for scripts/postgres.sh that notes each run in `runs`."""
    script = tmp_path / "postgres.sh"
    script.write_text(
        f'echo run >> "{tmp_path / "runs"}"\necho "{prints}"\necho "no server here" >&2\n'
        f"exit {exits}\n",
        encoding="utf-8",
    )
    return script


@pytest.fixture
def fresh_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(stores.POSTGRES_VARIABLE, raising=False)
    monkeypatch.setattr(stores, "_STARTED", {})


@pytest.mark.usefixtures("fresh_session")
def test_the_script_runs_once_and_every_test_gets_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://postgres@/postgres?host=/tmp/x&port=1"
    monkeypatch.setattr(stores, "SCRIPT", counting_script(tmp_path, prints=url, exits=0))
    assert [stores._server_url() for _ in range(3)] == [url] * 3
    assert (tmp_path / "runs").read_text() == "run\n"


@pytest.mark.usefixtures("fresh_session")
def test_a_server_that_cannot_start_is_tried_once_and_every_test_skips_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stores, "SCRIPT", counting_script(tmp_path, prints="", exits=1))
    for _ in range(3):
        with pytest.raises(pytest.skip.Exception, match=r"postgres\.sh: no server here"):
            stores._server_url()
    assert (tmp_path / "runs").read_text() == "run\n"
