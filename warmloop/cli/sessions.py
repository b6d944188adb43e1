"""`warmloop sessions`: the stored sessions, with what each cost and whether the provider's
cache is probably still warm."""

from __future__ import annotations

import time

import click
from rich.text import Text

from warmloop.cli.console import console
from warmloop.cli.session_view import session_cost, sessions_table
from warmloop.cli.shared import command_store, fail, store_option
from warmloop.errors import WarmloopError


@click.command()
@store_option
def sessions(store: str | None) -> None:
    """List stored sessions: model, steps, tokens, cost, idle time, and whether the
    provider's cache is probably still warm."""
    opened = command_store(store, read_only=True)
    try:
        infos = opened.sessions()
        rows = [(info, session_cost(info, opened.requests(info.id))) for info in infos]
    except WarmloopError as exc:
        fail(str(exc))
    out = console()
    if not rows:
        out.print(Text(f"no sessions in {opened.location}", style="dim"))
        return
    out.print(sessions_table(rows, time.time(), opened.location))
