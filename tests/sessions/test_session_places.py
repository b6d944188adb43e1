"""Where sessions live and what the CLI says about their cache: the default store in the
user's data directory, the store a spec names, and warm/cold from each provider's profile."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.sessions_data import grown
from warmloop.facts.profiles import profile_for
from warmloop.facts.usage import Usage
from warmloop.messages import Meta
from warmloop.sessions.locate import default_store_path, open_store
from warmloop.sessions.session import SessionInfo
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.sessions.warmth import Warmth, duration, warmth

SONNET = "anthropic:claude-sonnet-4-6"


def info(model: str, last_request_at: float | None, cache_ttl: str = "") -> SessionInfo:
    meta = Meta(created_at=0.0, last_request_at=last_request_at, model=model)
    return SessionInfo("s", "t_1", "t_1", 0, 4, meta, "", cache_ttl, 1, Usage())


def test_the_default_store_is_one_file_in_the_users_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WARMLOOP_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_store_path() == tmp_path / "data" / "warmloop" / "sessions.db"
    store = open_store()
    assert isinstance(store, SQLiteStore)
    assert store.location == str(tmp_path / "data" / "warmloop" / "sessions.db")
    store.close()
    monkeypatch.setenv("WARMLOOP_STORE", str(tmp_path / "chosen.db"))
    store = open_store()
    assert store.location == str(tmp_path / "chosen.db")
    store.close()


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    assert store.raw("PRAGMA journal_mode") == [("wal",)]
    store.close()


def test_a_postgres_url_opens_the_shared_store_and_hides_its_password(
    postgres_database: str,
) -> None:
    store = open_store(postgres_database)
    assert type(store).__name__ == "PostgresStore"
    lease = store.acquire("shared")
    store.append(lease, grown(1))
    assert [s.id for s in store.sessions()] == ["shared"]
    store.close()
    from warmloop.sessions.postgres import _PASSWORD

    assert _PASSWORD.sub(r"\1***@", "postgresql://u:secret@host/db") == "postgresql://u:***@host/db"


def test_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="its directory does not exist"):
        open_store(tmp_path / "nope" / "s.db")


def test_the_cache_is_warm_until_the_providers_cold_after_then_cold() -> None:
    limit = profile_for(SONNET).cold_after
    assert warmth(info(SONNET, 1000.0), 1000.0 + limit - 1).warm is True
    assert warmth(info(SONNET, 1000.0), 1000.0 + limit).warm is False
    hour = profile_for(SONNET, cache_ttl="1h").cold_after
    assert hour > limit
    assert warmth(info(SONNET, 0.0, cache_ttl="1h"), limit + 1).warm is True


def test_warmth_is_unknown_without_a_request_or_a_profile() -> None:
    assert warmth(info(SONNET, None), 5.0).warm is None
    assert warmth(info("", 1.0), 5.0).warm is None
    assert warmth(info("nobody:model", 1.0), 5.0).describe().endswith("unknown for this model")
    assert Warmth(10.0, math.inf).describe() == "idle 10 s; cache expected warm (it never expires)"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s"),
        (59.4, "59 s"),
        (60, "1 min"),
        (3600, "1 h"),
        (3661, "1 h 1 min"),
        (48 * 3600, "2 d"),
        (49 * 3600 + 60, "2 d 1 h"),
    ],
)
def test_durations_read_as_people_say_them(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


@given(st.floats(min_value=0, max_value=1e9))
def test_longer_idle_never_reads_as_a_shorter_unit(seconds: float) -> None:
    units = ["s", "min", "h", "d"]
    first = units.index(duration(seconds).split()[1])
    assert first <= units.index(duration(seconds * 2 + 1).split()[1])
