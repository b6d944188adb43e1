"""Where sessions are stored: `open_store(None)` is the SQLite file in the user's data
directory, a path is a SQLite file, and a `postgresql://` URL is a PostgreSQL store."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from warmloop.errors import ConfigurationError, SessionError
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.sessions.store import SessionStore
from warmloop.transcript import Transcript

STORE_VARIABLE = "WARMLOOP_STORE"
"""Environment variable naming the store when none is passed."""
FILE_NAME = "sessions.db"
_POSTGRES = ("postgresql://", "postgres://")
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def default_store_path() -> Path:
    """`sessions.db` in the user's data directory (XDG on Linux, via platformdirs)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("warmloop", appauthor=False)) / FILE_NAME


def open_store(
    spec: str | os.PathLike[str] | None = None, *, read_only: bool = False
) -> SessionStore:
    """The store `spec` names: None (then $WARMLOOP_STORE, then the default file), a
    SQLite file path, or a PostgreSQL URL. `read_only` (commands that only read): a SQLite
    file is opened for reading and never created, and nothing is written to it."""
    if spec is None:
        spec = os.environ.get(STORE_VARIABLE) or None
    if spec is None:
        path = default_store_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SessionError(
                f"cannot create the session directory {path.parent} ({exc.strerror}); "
                "pass --store PATH"
            ) from exc
        return SQLiteStore(path, read_only=read_only)
    text = os.fspath(spec)
    if text.startswith(_POSTGRES):
        from warmloop.sessions.postgres import PostgresStore

        return PostgresStore(text)
    scheme = _URL_SCHEME.match(text)
    if scheme is not None:  # a URL of a database warmloop does not speak is no file name
        raise ConfigurationError(
            f"session stores are a SQLite file path or a postgresql:// URL; "
            f"{scheme.group(1)!r} URLs are not supported"
        )
    return SQLiteStore(Path(text).expanduser(), read_only=read_only)


async def stored_transcript(
    session: str, store: SessionStore | str | os.PathLike[str] | None, purpose: str
) -> Transcript:
    """The transcript of stored session `session` in `store` (a store, or what `open_store`
    takes), read off the event loop; a ConfigurationError naming `purpose` when there is
    none."""
    opened = store if isinstance(store, SessionStore) else open_store(store)
    stored = await asyncio.to_thread(opened.load, session)
    if stored is None or stored.transcript is None:
        raise ConfigurationError(f"no stored session {session!r} {purpose}")
    return stored.transcript
