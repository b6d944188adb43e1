"""A load is one snapshot: a session read while another holder appends to it loads as it
was before the append or after it, never its row from before and its messages from after
(which reads as a damaged session). Run on SQLite and on a real PostgreSQL server, the
append committed between the load's two statements."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from tests.support.sessions_data import seeded, step
from tests.support.stores import OpenStore
from warmloop.sessions.migrations import Cursor, Params
from warmloop.sessions.sql import SqlStore


class Between:
    """A cursor that runs `meanwhile` once, right after its first statement."""

    def __init__(self, cursor: Cursor, meanwhile: list[Callable[[], None]]) -> None:
        self.cursor, self.meanwhile = cursor, meanwhile

    def execute(self, sql: str, params: Params = (), /) -> object:
        done = self.cursor.execute(sql, params)
        while self.meanwhile:
            self.meanwhile.pop()()
        return done

    def __getattr__(self, name: str) -> object:
        return getattr(self.cursor, name)


def test_a_load_racing_an_append_sees_one_state_of_the_session(make_store: OpenStore) -> None:
    reader, writer = make_store(), make_store()
    lease = writer.acquire("race")
    transcript = seeded()
    writer.append(lease, transcript)

    def append() -> None:
        transcript.extend(step(1))
        writer.append(lease, transcript)

    meanwhile = [append]
    original = reader.transaction

    @contextlib.contextmanager
    def racing(*, write: bool, durable: bool = False) -> Iterator[object]:
        with original(write=write, durable=durable) as cursor:
            yield Between(cursor, meanwhile) if not write else cursor

    reader.transaction = racing  # type: ignore[method-assign,assignment]
    stored = reader.load("race")
    assert stored is not None
    assert stored.transcript is not None
    assert len(stored.transcript) in (2, 5)  # before the append, or after it
    assert meanwhile == []  # the append did commit between the two statements
    assert isinstance(reader, SqlStore)
