"""A fleet worker: a DBOS process that dequeues tasks and runs them with warmloop's agents.

Each task is one DBOS workflow of two steps. `begin` opens the task's stored session (closing
a step an earlier run left cut) and records where the task's run starts in it. `attempt`
runs the agent there with `resume_at`: the session, which stores every assistant turn
before its tools run and every tool result as it comes, is the durable record of the run.
When a worker dies, DBOS recovers the workflow (`begin`'s record is replayed, `attempt` runs
again) and the run goes on from its last stored step: a stored response is never requested
again, a returned tool never run again (an unfinished call of a `repeatable=False` tool is
answered "interrupted"). DBOS owns the queue, its limits and the recovery; the conversation
is stored once, in the session store. With a `Limit`, every agent's model waits for room
under the provider's requests and tokens per minute, shared by the whole fleet
(`limited.LimitedModel`, keyed by the model's name).

A worker recovers the pending tasks of its own name when it starts (DBOS's executor id), so
a machine that restarts its worker under the same `--name` finishes what it left. A worker
that does not come back is taken over with nobody watching: every worker beats, and takes
up the tasks of workers that stopped beating once their session leases are free
(`recovery`, `liveness.Periods` for the bound); `recover=[NAME, ...]` does it at once for
workers known dead, and refuses one that is alive.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import NotRequired, TypedDict

from dbos import DBOS, DBOSClient

from warmloop.agent.agent import Agent
from warmloop.agent.result import RunError
from warmloop.errors import ConfigurationError
from warmloop.facts.pricing import cost_report
from warmloop.facts.usage import Usage
from warmloop.fleet.agent_registry import AgentRegistry
from warmloop.fleet.json_only import require_json
from warmloop.fleet.limited import LimitedModel
from warmloop.fleet.liveness import DEFAULT_PERIODS, Periods
from warmloop.fleet.outage import DATABASE_ERRORS, is_blip, unreachable
from warmloop.fleet.queues import APP_NAME, APP_VERSION, WARM_UP, WORKFLOW, QueueSpec
from warmloop.fleet.ratelimit import SharedLimiter
from warmloop.fleet.recovery import Recovery, refuse_live
from warmloop.fleet.retries import provider_wait, riding_out
from warmloop.fleet.stored import SERIALIZER
from warmloop.fleet.tasks import Task, TaskJson, TaskResult, TaskResultJson
from warmloop.fleet.warmup import prewarm_opening
from warmloop.fleet.window import NO_LIMIT, Limit
from warmloop.messages import JsonObject
from warmloop.providers.redact import redact_url
from warmloop.sessions.lease import LEASE_SECONDS
from warmloop.sessions.off_loop import off_loop
from warmloop.sessions.postgres import PostgresStore
from warmloop.sessions.resume import open_session
from warmloop.sessions.store import SessionStore
from warmloop.tools.invoke import describe_exception

log = logging.getLogger("warmloop.fleet")


@dataclass
class _Worker:
    registry: AgentRegistry
    store: SessionStore
    name: str
    limiter: SharedLimiter | None = None
    limit: Limit = NO_LIMIT
    lease_seconds: float = LEASE_SECONDS

    def agent(self, name: str) -> Agent:
        """The agent `name`, its model limited by this worker's `limit` (wrapped once)."""
        agent = self.registry.build(name)
        if self.limiter is not None and not isinstance(agent.model, LimitedModel):
            key = self.limit.key or agent.model.name
            agent.model = LimitedModel(agent.model, self.limiter, self.limit, key)
        return agent


_worker: _Worker | None = None
"""This process's worker (DBOS is one engine per process)."""


class Begun(TypedDict):
    """What `begin` records: the task's session and where its run starts there, or why it
    cannot run."""

    session: str
    start: NotRequired[int]
    error: NotRequired[str]


class Prewarmed(TypedDict):
    """What a warm-up records: whether the opening was sent as a prewarm, its usage (the
    fields of `Usage`) or why it failed."""

    prewarmed: bool
    usage: NotRequired[dict[str, int]]
    error: NotRequired[str]


def _current() -> _Worker:
    if _worker is None:
        raise ConfigurationError("no fleet worker runs in this process (serve() starts one)")
    return _worker


@DBOS.step(name="warmloop.fleet.begin")
async def _begin(task: TaskJson, workflow_id: str) -> Begun:
    """`_begin_once`, tried again by cause (`retries`); what still fails is why the task
    cannot run."""
    try:
        return await riding_out(
            lambda: _begin_once(task, workflow_id),
            f"task {workflow_id}",
            lease_seconds=_current().lease_seconds,
        )
    except DATABASE_ERRORS:
        raise  # the database is gone for good: nothing can be recorded, DBOS recovers it
    except Exception as exc:
        session = Task.from_json(task).session or workflow_id
        return {"session": session, "error": _failed_once(exc, f"task {workflow_id}")}


async def _begin_once(task: TaskJson, workflow_id: str) -> Begun:
    """Open the task's session (created if new; a cut step of an earlier run closed) and
    return where this task's run starts in it, or why it cannot run."""
    spec = Task.from_json(task)
    session = spec.session or workflow_id
    try:
        async with open_session(
            session, _current().store, conversation_id=spec.conversation_id
        ) as recorder:
            return {"session": session, "start": len(recorder.transcript)}
    except ConfigurationError as exc:  # a wrong task: trying again cannot help
        return {"session": session, "error": str(exc)}


@DBOS.step(name="warmloop.fleet.attempt")
async def _attempt(task: TaskJson, session: str, start: int) -> TaskResultJson:
    """`_attempt_once`, tried again by cause (`retries`); what still fails is the task's
    failed result, its error recorded once (never DBOS's traceback and retries)."""
    worker = _current()
    try:
        return await riding_out(
            lambda: _attempt_once(task, session, start),
            f"session {session}",
            lease_seconds=worker.lease_seconds,
        )
    except DATABASE_ERRORS:
        raise  # the database is gone for good: nothing can be recorded, DBOS recovers it
    except Exception as exc:
        error = _failed_once(exc, f"session {session}")
        return TaskResult("failed", session, error=error, worker=worker.name).to_json()


def _failed_once(exc: Exception, what: str) -> str:
    """The error a task fails with, logged in one line (no traceback)."""
    error = describe_exception(exc)
    log.warning("%s: the task failed: %s", what, error.strip().split("\n")[0][:300])
    return error


async def _attempt_once(task: TaskJson, session: str, start: int) -> TaskResultJson:
    """Run (or go on with) the task's run in its session; its result, failed or not."""
    worker = _current()
    spec = Task.from_json(task)
    try:
        agent = worker.agent(spec.agent)
    except ConfigurationError as exc:
        return TaskResult("failed", session, error=str(exc), worker=worker.name).to_json()
    outputs: JsonObject | None = None
    error = ""
    try:
        run = await agent.run(
            spec.task,
            session=session,
            store=worker.store,
            conversation_id=spec.conversation_id,
            resume_at=start,
        )
        outputs = run.outputs.model_dump(mode="json")
    except (RunError, ConfigurationError) as exc:  # the run ended, or cannot start: a result
        if is_blip(exc) or provider_wait(exc) is not None:
            raise  # the store or the provider was away mid-run: go on from its last step
        error = str(exc)
    requests = [r for r in await off_loop(worker.store.requests, session) if r.position >= start]
    report = cost_report(agent.model.name, [r.usage for r in requests])
    usage = report.usage if requests else Usage()
    return TaskResult(
        "done" if outputs is not None else "failed",
        session,
        outputs,
        error,
        len(requests),
        usage.prompt_tokens,
        usage.cache_read_tokens,
        usage.output_tokens,
        report.total,
        worker.name,
    ).to_json()


@DBOS.workflow(name=WORKFLOW)
async def run_task(task: TaskJson) -> TaskResultJson:
    """One fleet task (DBOS workflow): begin, then attempt until it returns."""
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    begun = await _begin(task, workflow_id)
    if "error" in begun:
        return TaskResult("failed", begun["session"], error=begun["error"]).to_json()
    return await _attempt(task, begun["session"], begun["start"])


@DBOS.step(name="warmloop.fleet.prewarm")
async def _prewarm(task: TaskJson) -> Prewarmed:
    """The task's opening sent as a prewarm (`warmup`): its usage, or none where the model
    takes no prewarm; an error is recorded once and the batch warms with its first task."""
    spec = Task.from_json(task)
    key = spec.conversation_id or spec.session or f"warm-up-{spec.agent}"
    try:
        usage = await prewarm_opening(_current().agent(spec.agent), spec.task, key)
    except Exception as exc:
        return {"prewarmed": False, "error": _failed_once(exc, f"warm-up of {spec.agent}")}
    return {"prewarmed": False} if usage is None else {"prewarmed": True, "usage": asdict(usage)}


@DBOS.workflow(name=WARM_UP)
async def warm_up(task: TaskJson) -> Prewarmed:
    """A batch's warm-up of one agent (DBOS workflow): its prewarm, once."""
    return await _prewarm(task)


def serve(
    url: str,
    registry: AgentRegistry,
    *,
    name: str,
    queues: Sequence[QueueSpec] = (QueueSpec(),),
    recover: Sequence[str] = (),
    limit: Limit = NO_LIMIT,
    periods: Periods = DEFAULT_PERIODS,
    stop: threading.Event | None = None,
) -> None:
    """Run a worker on the PostgreSQL database `url` (DBOS's state and the sessions) until
    `stop` is set (forever without one); with a `limit`, its models' requests stay under it
    together with every other worker's. It beats every `periods.heartbeat` seconds and takes
    up the tasks of workers that stopped beating (`recovery`); `recover` names dead workers
    whose tasks it takes up at once (refused for a worker that is alive)."""
    global _worker
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigurationError(
            f"a fleet lives in PostgreSQL: pass a postgresql:// URL, got {redact_url(url)!r}"
        )
    try:
        refuse_live(url, recover)  # before this worker runs anything
    except DATABASE_ERRORS as exc:
        raise unreachable(url, exc) from None
    _worker = worker = _open(url, registry, name, limit, periods)
    _configure_dbos(url, name)
    recovery: Recovery | None = None
    try:
        recovery = _launch(url, name, worker.store, periods)
        for queue in queues:
            queue.register()
        recovery.start()
        for dead in recover:
            recovery.take_up_now(dead)
        (stop or threading.Event()).wait()
    finally:
        _shut_down(worker, recovery)
        _worker = None


def _open(url: str, registry: AgentRegistry, name: str, limit: Limit, periods: Periods) -> _Worker:
    """This process's worker: its session store and, with a `limit`, the limiter it shares
    with the fleet (the store closed again when the limiter cannot be opened)."""
    store = PostgresStore(url, lease_seconds=periods.lease)
    try:
        limiter = SharedLimiter(url) if limit.limited else None
    except BaseException:
        store.close()
        raise
    return _Worker(registry, store, name, limiter, limit, periods.lease)


def _configure_dbos(url: str, name: str) -> None:
    """DBOS for this process: its state in `url`, this worker's name as its executor id
    (its pending tasks recovered when it starts again), every value stored as JSON."""
    DBOS(
        config={
            "name": APP_NAME,
            "system_database_url": url,
            "executor_id": name,
            "application_version": APP_VERSION,
            "log_level": "WARNING",
            "serializer": SERIALIZER,
        }
    )


def _launch(url: str, name: str, store: SessionStore, periods: Periods) -> Recovery:
    """Start DBOS, refuse a database that could hold a pickled row before any queue is
    served, and return the worker's recovery (not started yet); a database that cannot be
    reached is said so."""
    try:
        DBOS.launch()
        require_json(url)  # before any queue is served: no pickle row can be written
        client = DBOSClient(
            system_database_url=url, application_name=APP_NAME, serializer=SERIALIZER
        )
        return Recovery(url, name, store, periods, client)
    except DATABASE_ERRORS as exc:
        raise unreachable(url, exc) from None


def _shut_down(worker: _Worker, recovery: Recovery | None) -> None:
    """Stop what `serve` started, last started first: recovery, DBOS, the store, the limiter."""
    if recovery is not None:
        recovery.stop()
    DBOS.destroy()
    worker.store.close()
    if worker.limiter is not None:
        worker.limiter.close()
