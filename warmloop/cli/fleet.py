"""`warmloop worker` and `warmloop batch submit | status`: a fleet of workers on any number
of machines, pointed at one PostgreSQL database (`--db`, or $WARMLOOP_FLEET_DB), running the
tasks of JSONL batches (warmloop.fleet; needs the `fleet` extra)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from warmloop.cli.console import console
from warmloop.cli.exit_codes import DEADLINE, TASKS_FAILED
from warmloop.cli.shared import fail
from warmloop.cli.view import one_line
from warmloop.errors import WarmloopError
from warmloop.fleet.fanout import ROUTING_KEYS

if TYPE_CHECKING:
    from warmloop.fleet.client import BatchStatus, Fleet

DB_VARIABLE = "WARMLOOP_FLEET_DB"
STATUS_POLL_SECONDS = 1.0


def _required_db(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """`--db`, or $WARMLOOP_FLEET_DB: one of them must be given (not marked required in the
    help, which would hide that the variable is enough)."""
    del ctx, param
    if not value:
        fail(f"no fleet database: pass --db URL or set ${DB_VARIABLE}")
    return value


db_option = click.option(
    "--db",
    envvar=DB_VARIABLE,
    callback=_required_db,
    metavar="URL",
    help=f"The fleet's PostgreSQL database (queue and sessions) [default: ${DB_VARIABLE}].",
)
deadline_option = click.option(
    "--deadline",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help=f"With --wait: stop waiting after SECONDS, exiting with code {DEADLINE} when "
    "tasks are still unfinished.",
)
queue_option = click.option(
    "--queue", default="warmloop", show_default=True, help="The queue's name."
)


def open_fleet(db: str, *, read_only: bool = False) -> Fleet:
    """The fleet in database `db`; `read_only` for a command that only reads (it creates
    nothing there, and refuses a database that holds no fleet)."""
    try:
        from warmloop.fleet.client import Fleet
    except ImportError as exc:
        fail(f"the fleet needs DBOS: pip install 'warmloop[fleet]' ({exc})")
    try:
        return Fleet(db, read_only=read_only)
    except WarmloopError as exc:
        fail(str(exc))


@click.command()
@db_option
@click.option(
    "--agents", "agents_spec", required=True, metavar="MODULE:NAME", help="Your AgentRegistry."
)
@click.option(
    "--name",
    default=lambda: socket.gethostname().split(".")[0],
    help="This worker's name; restarted under the same name, it finishes what it left.",
)
@queue_option
@click.option("--concurrency", type=int, default=4, show_default=True, help="Tasks at once here.")
@click.option("--global-concurrency", type=int, help="Tasks at once across all workers.")
@click.option("--per-minute", type=int, help="Tasks started per minute across all workers.")
@click.option(
    "--requests-per-minute",
    type=int,
    metavar="N",
    help="Model requests per minute per model, across all workers (the provider's RPM).",
)
@click.option(
    "--tokens-per-minute",
    type=int,
    metavar="N",
    help="Prompt and output tokens per minute per model, across all workers (its TPM).",
)
@click.option(
    "--limit-key",
    metavar="NAME",
    help="Count every model's requests under NAME (default: each model's own name).",
)
@click.option(
    "--recover",
    multiple=True,
    metavar="NAME",
    help="Take over a dead worker's tasks now (refused while it is alive; a worker that "
    "stops beating is taken over without it).",
)
@click.option(
    "--heartbeat",
    type=float,
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="How often this worker beats and looks for dead workers' tasks; it is dead after "
    "3 periods without a beat.",
)
@click.option(
    "--lease",
    type=float,
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="How long a task's session lease lives after its last renewal (renewed 4 times "
    "a period while its run lives).",
)
def worker(
    db: str,
    agents_spec: str,
    name: str,
    queue: str,
    concurrency: int,
    global_concurrency: int | None,
    per_minute: int | None,
    requests_per_minute: int | None,
    tokens_per_minute: int | None,
    limit_key: str | None,
    recover: tuple[str, ...],
    heartbeat: float,
    lease: float,
) -> None:
    """Run fleet tasks from the queue until stopped (Ctrl-C or SIGTERM). A task of a
    worker that stops beating is taken up by a live one within max(3 heartbeats, the
    lease) plus a heartbeat."""
    try:
        from warmloop.fleet.agent_registry import load_registry
        from warmloop.fleet.liveness import Periods
        from warmloop.fleet.queues import QueueSpec
        from warmloop.fleet.window import Limit
        from warmloop.fleet.worker import serve
    except ImportError as exc:
        fail(f"the fleet needs DBOS: pip install 'warmloop[fleet]' ({exc})")
    sys.path.insert(0, os.getcwd())  # `--agents myapp.agents:registry` from here, as `python -m`
    stop = threading.Event()

    def stopping(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stop.set()

    try:
        from warmloop.messages import validate_id

        validate_id(name, "worker name")
        registry = load_registry(agents_spec)
        spec = QueueSpec(queue, concurrency, global_concurrency, per_minute)
        limit = Limit(requests_per_minute, tokens_per_minute, limit_key)
        periods = Periods(heartbeat, lease)
    except WarmloopError as exc:
        fail(str(exc))
    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    err = console(stderr=True)
    err.print(Text(f"worker {name}: agents {', '.join(registry.names)}; queue {queue}"))
    try:
        serve(
            db,
            registry,
            name=name,
            queues=[spec],
            recover=recover,
            limit=limit,
            periods=periods,
            stop=stop,
        )
    except WarmloopError as exc:  # the database down or unreachable, a live --recover
        fail(str(exc))


@click.group()
def batch() -> None:
    """Submit a batch of tasks (JSONL) to the fleet and follow it."""


@batch.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@db_option
@queue_option
@click.option(
    "--agents",
    "agents_spec",
    metavar="MODULE:NAME",
    help="The workers' AgentRegistry: a task naming an agent it lacks is refused before "
    "anything is submitted.",
)
@click.option("--no-warm", is_flag=True, help="Send every task at once (no warm-up first).")
@click.option(
    "--routing-keys",
    type=click.IntRange(min=1),
    default=ROUTING_KEYS,
    show_default=True,
    help="Routing keys an agent's new tasks share, round robin: about the tasks the fleet "
    "runs at once (OpenAI spills past ~15 requests a minute on one key).",
)
@click.option("--wait", is_flag=True, help="Follow the batch until every task is finished.")
@deadline_option
def submit(
    file: Path,
    db: str,
    queue: str,
    agents_spec: str | None,
    no_warm: bool,
    routing_keys: int,
    wait: bool,
    deadline: float | None,
) -> None:
    """Enqueue every task of FILE (one JSON object a line); prints the batch id first.
    Exits with code 3 when an agent's first task failed before any request (or, with
    --wait, when any task failed), 4 when --deadline passed first."""
    try:
        from warmloop.fleet.agent_registry import load_registry
        from warmloop.fleet.client import new_batch_id
        from warmloop.fleet.tasks import load_batch
    except ImportError as exc:
        fail(f"the fleet needs DBOS: pip install 'warmloop[fleet]' ({exc})")
    try:
        tasks = load_batch(file)
        if agents_spec is not None:
            sys.path.insert(0, os.getcwd())  # as `worker --agents` finds it
            known = load_registry(agents_spec).names
            unknown = sorted({t.agent for t in tasks} - set(known))
            if unknown:
                fail(
                    f"{file}: no agent {', '.join(map(repr, unknown))} in {agents_spec}; "
                    f"it knows {', '.join(known) or 'none'}"
                )
    except WarmloopError as exc:
        fail(str(exc))
    err = console(stderr=True)
    fleet = open_fleet(db)
    batch_id = new_batch_id()
    click.echo(batch_id)  # before any wait: a script has the id even if no worker comes
    sys.stdout.flush()
    cold: list[str] = []

    def failed_first(agent: str, why: str) -> None:
        cold.append(agent)
        err.print(
            Text(f"{agent}: its first task failed before any request: {one_line(why, 200)}"),
            style="red",
            soft_wrap=True,
        )

    def untaken(workflow_id: str) -> None:
        err.print(
            Text(
                f"no worker has taken {workflow_id} yet: is a worker serving queue "
                f"{queue} on this database? (warmloop worker --agents MODULE:NAME)"
            ),
            style="yellow",
            soft_wrap=True,
        )

    def unconfirmed(agent: str, why: str) -> None:
        err.print(Text(f"{agent}: fanning out unconfirmed: {why}"), style="yellow", soft_wrap=True)

    try:
        fleet.submit_batch(
            tasks,
            queue=queue,
            batch=batch_id,
            warm=not no_warm,
            on_warm=lambda agent: err.print(Text(f"{agent}: opening written; fanning out")),
            on_cold=failed_first,
            on_untaken=untaken,
            on_unconfirmed=unconfirmed,
            keys=routing_keys,
        )
        state = _follow(fleet, batch_id, deadline) if wait else None
    except WarmloopError as exc:
        fail(str(exc))
    finally:
        fleet.close()
    if cold or (state is not None and state.counts["failed"]):
        raise click.exceptions.Exit(TASKS_FAILED)
    if state is not None and not state.finished:
        raise click.exceptions.Exit(DEADLINE)


@batch.command()
@click.argument("batch_id", metavar="ID")
@db_option
@click.option("--wait", is_flag=True, help="Follow the batch until every task is finished.")
@deadline_option
@click.option("--json", "as_json", is_flag=True, help="Every task's state and result as JSON.")
def status(batch_id: str, db: str, wait: bool, deadline: float | None, as_json: bool) -> None:
    """Show a batch's progress: each task queued, running, waiting for recovery (its
    worker stopped beating), done or failed, with its result, cost or error. Exits with
    code 3 when any task failed, 4 when --wait --deadline passed with tasks unfinished
    (1 when the batch cannot be read)."""
    fleet = open_fleet(db, read_only=True)
    try:
        state = _follow(fleet, batch_id, deadline) if wait else _status(fleet, batch_id)
        if as_json:
            click.echo(json.dumps(_as_json(state), indent=2))
        else:
            console().print(_table(state))
            console().print(_summary(state))
    finally:
        fleet.close()
    if state.counts["failed"]:
        raise click.exceptions.Exit(TASKS_FAILED)
    if wait and not state.finished:
        raise click.exceptions.Exit(DEADLINE)


def _status(fleet: Fleet, batch_id: str) -> BatchStatus:
    try:
        return fleet.status(batch_id)
    except WarmloopError as exc:
        fail(str(exc))


def _follow(fleet: Fleet, batch_id: str, deadline: float | None = None) -> BatchStatus:
    """Show progress on stderr until the batch is finished, or `deadline` seconds passed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    state = _status(fleet, batch_id)
    end = None if deadline is None else time.monotonic() + deadline
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console(stderr=True), transient=True) as progress:
        bar = progress.add_task(batch_id, total=len(state.tasks))
        while True:
            counts = state.counts
            finished = counts["done"] + counts["failed"]
            progress.update(bar, completed=finished, description=_summary(state).plain)
            if state.finished or (end is not None and time.monotonic() >= end):
                return state
            time.sleep(STATUS_POLL_SECONDS)
            state = _status(fleet, batch_id)


def _summary(state: BatchStatus) -> Text:
    counts = state.counts
    from warmloop.fleet.client import STATES  # imported once the fleet is known installed

    parts = [f"{counts[k]} {k}" for k in STATES if counts[k]]
    cost = state.cost_usd
    money = f"${cost:.4f}" if cost is not None else "unpriced"
    return Text(f"{state.batch}: {', '.join(parts)}; {state.requests} requests, {money}")


def _table(state: BatchStatus) -> Table:
    table = Table("task", "state", "requests", "cost", "worker", "result")
    for task in state.tasks:
        result = task.result
        name = task.task.id or task.workflow_id
        if result is None:
            table.add_row(name, task.state, "", "", task.worker, one_line(task.error, 80))
            continue
        cost = f"${result.cost_usd:.4f}" if result.cost_usd is not None else ""
        shown = json.dumps(result.outputs) if result.outputs is not None else result.error
        table.add_row(
            name, result.status, str(result.requests), cost, result.worker, one_line(shown, 80)
        )
    return table


def _as_json(state: BatchStatus) -> dict[str, object]:
    return {
        "batch": state.batch,
        "counts": dict(state.counts),
        "requests": state.requests,
        "cost_usd": state.cost_usd,
        "tasks": [
            {
                "id": t.workflow_id,
                "task": t.task.to_json(),
                "status": t.status,
                "state": t.state,
                "worker": t.worker,
                "result": t.result.to_json() if t.result is not None else None,
                "error": t.error,
            }
            for t in state.tasks
        ],
    }
