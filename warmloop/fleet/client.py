"""Submitting tasks to a fleet and reading back what they did: a thin layer over DBOS's
client (tasks are DBOS workflows in the `dbos` schema of the fleet's PostgreSQL database).

A batch is a set of workflows whose ids share the batch id (`<batch>-<n>`); each task's
session defaults to its workflow id, so its transcript is `warmloop show <id>` away.

Cache-aware fan-out (`warm=True`, the default): each agent's first task goes alone and the
rest follow once its usage shows the opening cached (`fanout`).
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict, Unpack
from urllib.parse import urlsplit

import psycopg
from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowStatus
from psycopg.rows import TupleRow
from sqlalchemy.engine import make_url

from warmloop.errors import ConfigurationError
from warmloop.facts.usage import Usage
from warmloop.fleet.fanout import ROUTING_KEYS, batch_key, usage_from_json
from warmloop.fleet.json_only import require_json
from warmloop.fleet.liveness import Liveness, WorkerState
from warmloop.fleet.outage import DATABASE_ERRORS, unreachable
from warmloop.fleet.queues import APP_NAME, APP_VERSION, DEFAULT_QUEUE, WARM_UP, WORKFLOW
from warmloop.fleet.recovery import held_tasks
from warmloop.fleet.stored import SERIALIZER, Stored, read_stored
from warmloop.fleet.tasks import Task, TaskResult
from warmloop.keepalive.leader_first import Warmed, released, unconfirmed, written
from warmloop.providers.redact import redact_url
from warmloop.sessions.locate import open_store

WARM_POLL_SECONDS = 0.2
WARM_TIMEOUT_SECONDS = 600.0
"""How long a batch waits for an agent's first request before fanning out anyway."""
UNTAKEN_SECONDS = 10.0
"""How long a leader may stay queued before the submitter is told no worker has taken it."""


class _Query(TypedDict, total=False):
    """Which tasks `_states` asks DBOS for (`DBOSClient.list_workflows`' keywords)."""

    workflow_ids: list[str]
    workflow_id_prefix: str
    name: str


FINISHED = frozenset({"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
WAITING = "waiting for recovery"
STATES = ("done", "failed", "running", WAITING, "queued")


@dataclass(frozen=True)
class TaskState:
    """One task of a batch as the fleet sees it: DBOS's status, and its result once done."""

    workflow_id: str
    task: Task
    status: str
    result: TaskResult | None
    error: str = ""
    worker: str = ""
    """The worker that holds or last held it (DBOS's executor id)."""
    orphaned: bool = False
    """Running on a worker that stopped beating: it waits to be taken up (`recovery`)."""

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def state(self) -> str:
        """queued, running, waiting for recovery, done or failed."""
        if self.result is not None:
            return self.result.status
        if self.finished:
            return "failed"
        if self.status != "PENDING":
            return "queued"
        return WAITING if self.orphaned else "running"


@dataclass(frozen=True)
class BatchStatus:
    """Every task of a batch, and the totals."""

    batch: str
    tasks: list[TaskState] = field(default_factory=list)

    @property
    def counts(self) -> Counter[str]:
        """Tasks by state: queued, running, waiting for recovery, done, failed."""
        return Counter(t.state for t in self.tasks)

    @property
    def finished(self) -> bool:
        return all(t.finished for t in self.tasks)

    @property
    def cost_usd(self) -> float | None:
        """What the batch's requests cost so far (None when no task's model is priced)."""
        costs = [t.result.cost_usd for t in self.tasks if t.result and t.result.cost_usd]
        return sum(costs) if costs else None

    @property
    def requests(self) -> int:
        return sum(t.result.requests for t in self.tasks if t.result)


def fleet_url(url: str) -> str:
    """`url` when it is a PostgreSQL URL the database drivers can read; a
    ConfigurationError otherwise (a malformed host or port is named without the URL's
    credentials, never a driver's ValueError)."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigurationError(
            f"a fleet lives in PostgreSQL: pass a postgresql:// URL, got {redact_url(url)!r}"
        )
    try:
        make_url(url)  # SQLAlchemy's reading, which DBOS uses
        _ = urlsplit(url).port  # and the standard library's, which psycopg's checks follow
    except ValueError:
        raise ConfigurationError(
            f"the fleet's database URL {redact_url(url)!r} cannot be read: check its host "
            "(an IPv6 address in brackets, [::1]), its port (a number) and its escaping"
        ) from None
    return url


def require_fleet(url: str) -> None:
    """A database that holds a fleet (DBOS's tables): a read-only command never creates
    them in another application's database, it says there is no fleet there."""
    with psycopg.connect(url, autocommit=True) as connection:
        found = connection.execute("SELECT to_regclass('dbos.workflow_status')").fetchone()
    if found is None or found[0] is None:
        raise ConfigurationError(
            f"the database {redact_url(url)} holds no warmloop fleet (no worker has started "
            "there and no batch was submitted to it); nothing was created in it. Check --db, "
            "or start a worker or submit a batch first"
        )


def new_batch_id() -> str:
    return f"b{secrets.token_hex(6)}"


class Fleet:
    """A handle on a fleet's database: submit tasks and batches, read their status."""

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.url = fleet_url(url)
        self.read_only = read_only
        """Only reads (`fleet workers`, `batch status`): creates nothing in the database,
        and refuses one that holds no fleet."""
        try:
            if read_only:
                require_fleet(url)
            else:
                DBOS.migrate(url)  # a submitter may come before any worker: DBOS's tables
            require_json(url)  # and let them hold no pickle
            self._client = DBOSClient(
                system_database_url=url,
                application_name=APP_NAME,
                serializer=SERIALIZER,
                retry_connection_errors=False,  # a database that is down is said, not waited on
            )
        except DATABASE_ERRORS as exc:
            raise unreachable(url, exc) from None
        self._db: psycopg.Connection[TupleRow] | None = None
        self._liveness: Liveness | None = None

    def close(self) -> None:
        self._client.destroy()
        if self._db is not None:
            self._db.close()
        if self._liveness is not None:
            self._liveness.close()

    def _stored(self, workflow_ids: list[str]) -> dict[str, Stored]:
        """The tasks' stored values, read as JSON only (`stored`); a connection the server
        dropped since (a restart) is opened again, once."""
        for again in (True, False):
            try:
                if self._db is None or self._db.broken:
                    self._db = psycopg.connect(self.url, autocommit=True)
                return read_stored(self._db, workflow_ids)
            except psycopg.Error as exc:
                if not (again and self._db is not None and self._db.broken):
                    raise unreachable(self.url, exc) from None
        raise AssertionError("unreachable: the second try returns or raises")

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(
        self, task: Task, *, queue: str = DEFAULT_QUEUE, workflow_id: str = "", name: str = WORKFLOW
    ) -> str:
        """Enqueue one task; returns its id (DBOS's workflow id). Submitting an id again
        attaches to the task already there (it never runs twice). `name` is the workflow
        (a task; `WARM_UP` for a batch's prewarm of its opening)."""
        options: EnqueueOptions = {
            "queue_name": queue,
            "workflow_name": name,
            "workflow_id": workflow_id or f"t{secrets.token_hex(8)}",
            "app_version": APP_VERSION,
        }
        try:
            return self._client.enqueue(options, task.to_json()).get_workflow_id()
        except DATABASE_ERRORS as exc:
            raise unreachable(self.url, exc) from None

    def submit_batch(
        self,
        tasks: Sequence[Task],
        *,
        queue: str = DEFAULT_QUEUE,
        batch: str | None = None,
        warm: bool = True,
        on_warm: Callable[[str], None] | None = None,
        on_cold: Callable[[str, str], None] | None = None,
        on_untaken: Callable[[str], None] | None = None,
        on_unconfirmed: Callable[[str, str], None] | None = None,
        keys: int = ROUTING_KEYS,
    ) -> str:
        """Enqueue every task under one batch id (returned). With `warm`, each agent's
        opening is written first, by a prewarm where its model takes one (`warmup`), else by
        its first task going alone, and the rest follow once the usage shows it cached
        (`fanout`), its new tasks without a routing key sharing `keys`: `on_warm(agent)`
        then; `on_unconfirmed(agent, why)` when the usage never showed it and the rest go
        anyway; `on_cold(agent, why)` when the first task ended without a request (its
        error); and `on_untaken(workflow_id)` once when no worker has taken a warm-up or a
        first task after UNTAKEN_SECONDS (none runs, or all are busy)."""
        batch = batch or new_batch_id()
        ids = [f"{batch}-{n:05d}" for n in range(len(tasks))]
        if warm:
            tasks = self._routed(tasks, batch, max(1, keys))
        first: dict[str, int] = {}
        for n, task in enumerate(tasks):
            first.setdefault(task.agent, n)
        leaders = sorted(first.values()) if warm else []
        alone: list[int] = []  # leaders whose first task warms the cache (no prewarm)
        if leaders:
            warmed = self._prewarmed({ids[n]: tasks[n] for n in leaders}, queue, on_untaken)
            alone = [n for n in leaders if ids[n] not in warmed]
            for n in alone:
                self.submit(tasks[n], queue=queue, workflow_id=ids[n])
            if alone:
                warmed |= self._warmed({ids[n]: tasks[n] for n in alone}, on_untaken)
            for n in leaders:
                if ids[n] not in warmed:  # still waiting: fanned out anyway, nothing known
                    continue
                outcome = warmed[ids[n]]
                if outcome.confirmed:
                    if on_warm is not None:
                        on_warm(tasks[n].agent)
                elif outcome.requests:
                    if on_unconfirmed is not None:
                        on_unconfirmed(tasks[n].agent, outcome.why)
                elif on_cold is not None:
                    on_cold(tasks[n].agent, outcome.why)
        for n, task in enumerate(tasks):
            if n not in alone:
                self.submit(task, queue=queue, workflow_id=ids[n])
        return batch

    def _routed(self, tasks: Sequence[Task], batch: str, keys: int) -> list[Task]:
        """`tasks`, each new conversation without a routing key given one of the `keys` its
        agent's share in this batch, round robin (`fanout`); a session that exists keeps the
        conversation it has."""
        store = open_store(self.url)
        given: Counter[str] = Counter()
        routed = []
        try:
            for task in tasks:
                if not task.conversation_id and not (task.session and store.info(task.session)):
                    key = batch_key(batch, task.agent, given[task.agent] % keys)
                    given[task.agent] += 1
                    task = replace(task, conversation_id=key)
                routed.append(task)
        finally:
            store.close()
        return routed

    def _prewarmed(
        self, leaders: dict[str, Task], queue: str, on_untaken: Callable[[str], None] | None
    ) -> dict[str, Warmed]:
        """Each leader's opening sent as a prewarm by a worker (`warmup`), waited for as a
        leader is (`_warmed`): the `Warmed` of each leader whose model took one; the others
        (no prewarm, its error, still waiting) are left out, to warm with their first task."""
        runs = {f"{workflow_id}-warm-up": workflow_id for workflow_id in leaders}
        for run, workflow_id in runs.items():
            self.submit(leaders[workflow_id], queue=queue, workflow_id=run, name=WARM_UP)
        outcome: dict[str, Warmed] = {}
        start = time.monotonic()
        told: set[str] = set()
        while runs:
            for run, workflow_id in list(runs.items()):
                try:
                    status = self._client.retrieve_workflow(run).get_status().status
                except DATABASE_ERRORS as exc:
                    raise unreachable(self.url, exc) from None
                if status not in FINISHED:
                    late = time.monotonic() >= start + UNTAKEN_SECONDS
                    if status == "ENQUEUED" and late and run not in told and on_untaken:
                        told.add(run)
                        on_untaken(run)
                    continue
                del runs[run]
                output = self._stored([run]).get(run, Stored()).output
                if isinstance(output, dict) and output.get("prewarmed"):
                    usage = usage_from_json(output.get("usage"))
                    confirmed = written(usage)
                    outcome[workflow_id] = Warmed(confirmed, 1, "" if confirmed else unconfirmed(1))
            if not runs or time.monotonic() >= start + WARM_TIMEOUT_SECONDS:
                break
            time.sleep(WARM_POLL_SECONDS)
        return outcome

    def _warmed(
        self, leaders: dict[str, Task], on_untaken: Callable[[str], None] | None = None
    ) -> dict[str, Warmed]:
        """Wait until each leader's usage shows its opening cached, or it cannot any more
        (looking at least once, then for up to WARM_TIMEOUT_SECONDS): its `Warmed`, confirmed
        or why not; a leader still waiting is left out."""
        store = open_store(self.url)
        waiting = dict(leaders)
        outcome: dict[str, Warmed] = {}
        start = time.monotonic()
        answered: dict[str, float] = {}  # when each leader's first response was seen stored
        told: set[str] = set()
        try:
            while waiting:
                for workflow_id, task in list(waiting.items()):
                    info = store.info(task.session or workflow_id)
                    try:
                        done = self._client.retrieve_workflow(workflow_id).get_status()
                    except DATABASE_ERRORS as exc:
                        raise unreachable(self.url, exc) from None
                    now = time.monotonic()
                    requests = info.requests if info is not None else 0
                    if requests:
                        answered.setdefault(workflow_id, now)
                    usage = info.usage if info is not None else Usage()
                    waited = now - answered[workflow_id] if requests else None
                    finished = done.status in FINISHED
                    warmed = released(usage, requests, finished=finished, waited=waited)
                    if warmed is not None and not warmed.requests:
                        warmed = replace(warmed, why=self._why_failed(workflow_id))
                    if warmed is not None:
                        outcome[workflow_id] = warmed
                    else:
                        late = now >= start + UNTAKEN_SECONDS
                        untaken = done.status == "ENQUEUED" and late and workflow_id not in told
                        if untaken and on_untaken is not None:
                            told.add(workflow_id)
                            on_untaken(workflow_id)
                        continue
                    del waiting[workflow_id]
                if not waiting or time.monotonic() >= start + WARM_TIMEOUT_SECONDS:
                    break
                time.sleep(WARM_POLL_SECONDS)
        finally:
            store.close()
        return outcome

    def _why_failed(self, workflow_id: str) -> str:
        """Why a leader that finished stored no request (its result's error)."""
        state = self.task(workflow_id)
        if state.result is not None and state.result.error:
            return state.result.error
        return state.error or f"it ended {state.status.lower()}"

    def status(self, batch: str) -> BatchStatus:
        """Every task of `batch`, in submission order."""
        states = self._states(workflow_id_prefix=f"{batch}-", name=WORKFLOW)
        if not states:
            raise ConfigurationError(f"no batch {batch!r} in this fleet")
        return BatchStatus(batch, sorted(states, key=lambda s: s.workflow_id))

    def task(self, workflow_id: str) -> TaskState:
        """One task by its id."""
        found = self._states(workflow_ids=[workflow_id])
        if not found:
            raise ConfigurationError(f"no task {workflow_id!r} in this fleet")
        return found[0]

    def _states(self, **query: Unpack[_Query]) -> list[TaskState]:
        """The tasks DBOS lists for `query`; their values read by `_stored`, never by DBOS
        (which would unpickle a row that says it is a pickle)."""
        try:
            found = self._client.list_workflows(load_input=False, load_output=False, **query)
        except DATABASE_ERRORS as exc:
            raise unreachable(self.url, exc) from None
        stored = self._stored([w.workflow_id for w in found])
        dead = {w.name for w in self.workers() if not w.alive}
        return [
            _task_state(w, stored.get(w.workflow_id, Stored()), w.executor_id in dead)
            for w in found
        ]

    def workers(self) -> list[WorkerState]:
        """Every worker that registered in this fleet, alive or not, by name."""
        try:
            if self._liveness is None:
                self._liveness = Liveness(self.url, create=not self.read_only)
            return self._liveness.workers()
        except psycopg.Error as exc:
            raise unreachable(self.url, exc) from None

    def held(self) -> Counter[str]:
        """How many tasks each worker holds now (running, or cut off by its death)."""
        try:
            return held_tasks(self._client)
        except DATABASE_ERRORS as exc:
            raise unreachable(self.url, exc) from None


def _task_state(found: WorkflowStatus, stored: Stored, orphaned: bool) -> TaskState:
    """A task's state from its stored values; one that cannot be read is a failed task
    saying why (the others of its batch are still shown)."""
    workflow_id, status, worker = found.workflow_id, str(found.status), found.executor_id or ""
    where = f"task {workflow_id}"
    problem = stored.unreadable
    if not problem:
        try:
            task = Task.from_json(stored.task, where)
            output = stored.output
            result = TaskResult.from_json(output) if isinstance(output, dict) else None
            return TaskState(workflow_id, task, status, result, stored.error, worker, orphaned)
        except (ConfigurationError, KeyError, TypeError) as exc:
            problem = str(exc)
    unknown = Task("unknown", "(unreadable)", id=None)
    return TaskState(workflow_id, unknown, "ERROR", None, f"{where}: {problem}", worker)
