"""Taking up a dead worker's tasks, with nobody watching, through DBOS's public API.

A task a worker has dequeued is a PENDING workflow under that worker's executor id. Every
live worker, once per heartbeat (`liveness.Periods`), claims the dead workers no live
worker has claimed (`Liveness.claim`), lists their PENDING tasks (`DBOSClient.list_workflows`
by status and executor id) and puts each whose session lease is free back on its queue
(`DBOSClient.resume_workflow`); a worker dequeues it under its own executor id and the task
goes on from its session's last stored step (`worker`). A task whose lease is still held is
left for a later look: its run may still be writing (a worker cut off from the database
but not dead), and the lease is what keeps two runs from one session.

`--recover NAME` (`take_up` with `leases=False`) is the manual way: it refuses a worker
that is alive, and its tasks wait for their leases at their first step instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import psycopg
from dbos import DBOSClient

from warmloop.errors import ConfigurationError
from warmloop.fleet.liveness import Liveness, Periods
from warmloop.fleet.outage import DATABASE_ERRORS
from warmloop.fleet.queues import DEFAULT_QUEUE, WORKFLOW
from warmloop.fleet.stored import read_stored
from warmloop.sessions.lease import holder_gone
from warmloop.sessions.store import SessionStore

log = logging.getLogger("warmloop.fleet")


def held_tasks(client: DBOSClient) -> Counter[str]:
    """How many tasks each worker holds (PENDING workflows by executor id)."""
    found = client.list_workflows(
        status="PENDING", name=WORKFLOW, load_input=False, load_output=False
    )
    return Counter(w.executor_id or "" for w in found)


def lease_free(store: SessionStore, session: str) -> bool:
    """Whether no live run holds `session`: no lease, a lapsed one, or a holder on this host
    whose process is gone."""
    info = store.info(session)
    if info is None or not info.lease_holder or info.lease_expires is None:
        return True
    return info.lease_expires <= time.time() or holder_gone(info.lease_holder)


def take_up(
    client: DBOSClient,
    db: psycopg.Connection[Any],
    store: SessionStore,
    dead: str,
    *,
    leases: bool = True,
) -> tuple[list[str], list[str]]:
    """Put the PENDING tasks of worker `dead` back on their queues (with `leases`, only
    those whose session lease is free): the ids put back, and those left for later."""
    found = client.list_workflows(
        status="PENDING", executor_id=dead, name=WORKFLOW, load_input=False, load_output=False
    )
    stored = read_stored(db, [w.workflow_id for w in found])
    resumed, waiting = [], []
    for workflow in found:
        task = stored[workflow.workflow_id].task if workflow.workflow_id in stored else None
        named = task.get("session") if isinstance(task, dict) else None
        session = named if isinstance(named, str) else workflow.workflow_id
        if leases and not lease_free(store, session):
            waiting.append(workflow.workflow_id)
            continue
        client.resume_workflow(
            workflow.workflow_id, queue_name=workflow.queue_name or DEFAULT_QUEUE
        )
        resumed.append(workflow.workflow_id)
    return resumed, waiting


def refuse_live(url: str, names: Sequence[str]) -> None:
    """`--recover NAME...`: ConfigurationError when any of `names` is alive."""
    if not names:
        return
    liveness = Liveness(url)
    try:
        states = {w.name: w for w in liveness.workers()}
    finally:
        liveness.close()
    for name in names:
        state = states.get(name)
        if state is not None and state.alive:
            raise ConfigurationError(
                f"worker {name!r} is alive (its last heartbeat {state.seconds_since_beat:.0f} s "
                "ago): its tasks are its own. A worker that stops beating is taken over "
                "automatically; --recover is for a worker known to be dead"
            )


class Recovery:
    """A worker's heartbeat, and its look for dead workers' tasks, every heartbeat period,
    on a thread of its own (`start`, `stop`)."""

    def __init__(
        self, url: str, name: str, store: SessionStore, periods: Periods, client: DBOSClient
    ) -> None:
        self.name, self.store, self.periods, self.client = name, store, periods, client
        self.liveness = Liveness(url)
        self.url = url
        self._connection: psycopg.Connection[Any] = psycopg.connect(url, autocommit=True)
        self._lock = threading.Lock()  # the connections are the thread's and take_up_now's
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="warmloop-recovery", daemon=True)

    @property
    def db(self) -> psycopg.Connection[Any]:
        """The connection tasks are read on, made again when a database restart cut it."""
        if self._connection.broken or self._connection.closed:
            self._connection = psycopg.connect(self.url, autocommit=True)
        return self._connection

    def start(self) -> None:
        self.liveness.register(self.name, self.periods.heartbeat)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and say this worker left (others take its tasks up)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        try:
            self.liveness.leave(self.name)
        except DATABASE_ERRORS as exc:
            log.warning("worker %s: could not say it left (%s)", self.name, exc)
        self.liveness.close()
        self._connection.close()
        self.client.destroy()

    def _run(self) -> None:
        while not self._stop.wait(self.periods.heartbeat):
            started = time.monotonic()
            try:
                self.look()
            except Exception as exc:  # a blip, or a surprise: the next beat tries again
                first = str(exc).strip().split("\n")[0]
                log.warning(
                    "worker %s: heartbeat failed (%s: %s)", self.name, type(exc).__name__, first
                )
            if time.monotonic() - started > self.periods.heartbeat:
                log.warning("worker %s: a heartbeat took longer than its period", self.name)

    def take_up_now(self, dead: str) -> list[str]:
        """`--recover NAME`: `dead`'s tasks back on their queues now, leases held or not
        (each waits for its lease at its first step); `refuse_live` said it is dead."""
        with self._lock:
            resumed, _ = take_up(self.client, self.db, self.store, dead, leases=False)
        for workflow_id in resumed:
            log.warning("worker %s: took up task %s of worker %s", self.name, workflow_id, dead)
        return resumed

    def look(self) -> list[str]:
        """Beat once, then take up what dead workers left: the task ids put back."""
        with self._lock:
            return self._look()

    def _look(self) -> list[str]:
        me = self.name
        self.liveness.beat(me)
        resumed: list[str] = []
        for dead in self.liveness.claim(self.name):
            back, waiting = take_up(self.client, self.db, self.store, dead)
            for workflow_id in back:
                log.warning(
                    "worker %s: took up task %s of dead worker %s", self.name, workflow_id, dead
                )
            if waiting:
                log.info(
                    "worker %s: %d tasks of %s wait for their leases", self.name, len(waiting), dead
                )
            resumed += back
        return resumed
