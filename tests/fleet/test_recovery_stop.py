"""`Recovery.stop` returns only once the heartbeat thread has ended (issue 49). A worker that
stops (its `stop` event, SIGTERM) says it left and closes its store, DBOS and connections
right after: a heartbeat thread still inside a take-up then would put tasks back after its
worker left, on connections closed under it. So stop waits for a look in progress, here
one held inside its take-up of a dead worker's tasks by a lock the test holds on DBOS's
workflow table, released only once stop is seen waiting for the thread."""

from __future__ import annotations

import threading
import time

import psycopg
from dbos import DBOSClient

from tests.support.thread_frames import GIVE_UP, waiting_in
from warmloop.fleet.client import Fleet
from warmloop.fleet.liveness import Liveness, Periods
from warmloop.fleet.queues import APP_NAME
from warmloop.fleet.recovery import Recovery
from warmloop.fleet.stored import SERIALIZER
from warmloop.sessions.postgres import PostgresStore

WAITING_ON_THE_TABLE = (
    "SELECT count(*) FROM pg_locks WHERE NOT granted"
    " AND relation = 'dbos.workflow_status'::regclass"
)


def test_stop_returns_once_a_take_up_in_progress_has_ended(fleet_db: str) -> None:
    with Fleet(fleet_db):  # DBOS's tables, as a submitter or a worker makes them
        pass
    store = PostgresStore(fleet_db)
    liveness = Liveness(fleet_db)
    liveness.register("gone", 600.0)
    liveness.leave("gone")  # dead at once: the next look takes up its tasks
    client = DBOSClient(
        system_database_url=fleet_db, application_name=APP_NAME, serializer=SERIALIZER
    )
    recovery = Recovery(fleet_db, "me", store, Periods(heartbeat=0.1), client)
    held = psycopg.connect(fleet_db)  # a transaction holding DBOS's workflow table
    held.execute("LOCK TABLE dbos.workflow_status IN ACCESS EXCLUSIVE MODE")
    watch = psycopg.connect(fleet_db, autocommit=True)
    after_stop: list[bool] = []
    try:
        recovery.start()
        (beating,) = [t for t in threading.enumerate() if t.name == "warmloop-recovery"]
        deadline = time.monotonic() + GIVE_UP
        while watch.execute(WAITING_ON_THE_TABLE).fetchone() == (0,):
            assert time.monotonic() < deadline, "the look never reached the dead worker's tasks"
            time.sleep(0.05)

        def stop() -> None:
            recovery.stop()
            after_stop.append(beating.is_alive())

        stopper = threading.Thread(target=stop, name="stopper")
        stopper.start()
        while stopper.is_alive() and waiting_in(stopper, "join") is None:
            assert time.monotonic() < deadline, "stop neither returned nor waited"
            time.sleep(0.01)
        held.rollback()  # the take-up goes on, finds nothing, and the thread ends
        stopper.join(GIVE_UP)
        beating.join(GIVE_UP)
        assert after_stop == [False]  # stop returned with the thread already ended
        assert liveness.alive("me") is False  # it left, and nothing beat after
    finally:
        held.close()
        watch.close()
        liveness.close()
        store.close()
