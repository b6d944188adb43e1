"""`warmloop fleet workers`: every worker of a fleet, alive or not, when it last beat and
how many tasks it holds (a dead one's wait to be taken up by a live one)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from warmloop.cli.console import console
from warmloop.cli.fleet import db_option, open_fleet
from warmloop.cli.shared import fail
from warmloop.errors import WarmloopError


@click.group()
def fleet() -> None:
    """Look at the fleet's workers."""


@fleet.command()
@db_option
@click.option("--json", "as_json", is_flag=True, help="Every worker as JSON.")
def workers(db: str, as_json: bool) -> None:
    """List every worker: alive or dead, seconds since its last heartbeat, tasks held."""
    handle = open_fleet(db, read_only=True)
    try:
        found, held = handle.workers(), handle.held()
    except WarmloopError as exc:
        fail(str(exc))
    finally:
        handle.close()
    rows = [
        {
            "name": w.name,
            "host": w.host,
            "alive": w.alive,
            "seconds_since_heartbeat": round(w.seconds_since_beat, 1),
            "heartbeat_seconds": w.heartbeat,
            "tasks_held": held[w.name],
            "taken_over_by": w.taken_by,
        }
        for w in found
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table("worker", "host", "state", "last heartbeat", "tasks held")
    for row in rows:
        state = "alive" if row["alive"] else "dead"
        if not row["alive"] and row["taken_over_by"]:
            state = f"dead (taken over by {row['taken_over_by']})"
        ago = f"{row['seconds_since_heartbeat']:.1f} s ago"
        table.add_row(str(row["name"]), str(row["host"]), state, ago, str(row["tasks_held"]))
    console().print(table)
    if not rows:
        console().print("no worker has registered in this fleet yet")
