"""What the CLI's verbs share: the context they build on, failing with one red line, the
options several verbs take (`--workspace`, `--max-steps`, `--store`) and the session store
such an option names, open for as long as the command runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click
from rich.text import Text

from warmloop.agent.agent import DEFAULT_MAX_STEPS
from warmloop.cli.console import console
from warmloop.cli.view import one_line
from warmloop.errors import WarmloopError
from warmloop.providers.base import Model
from warmloop.providers.select import resolve_model
from warmloop.sessions.locate import STORE_VARIABLE, open_store
from warmloop.sessions.session import StoredSession
from warmloop.sessions.store import SessionStore

ERROR_CHARS = 500
"""The longest error line `fail` prints; a longer message is cut."""


@dataclass
class CliContext:
    """What the commands build on; tests pass one whose factory returns a scripted model."""

    model_factory: Callable[..., Model] = resolve_model


def fail(message: str, code: int = 1) -> NoReturn:
    """Print `message` as one red line on stderr and exit with `code` (1 by default; the
    codes by kind are `cli.exit_codes`)."""
    console(stderr=True).print(
        Text(f"error: {one_line(message, ERROR_CHARS)}", style="red"), soft_wrap=True
    )
    raise click.exceptions.Exit(code)


workspace_option = click.option(
    "--workspace",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory the agent may read (list_files, read_file, search).",
)
max_steps_option = click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_STEPS,
    show_default=True,
    help="Step budget.",
)
store_option = click.option(
    "--store",
    metavar="PATH|URL",
    envvar=STORE_VARIABLE,
    help="Session store: a SQLite file or a postgresql:// URL "
    "[default: sessions.db in the user data directory].",
)


def command_store(store: str | None, *, read_only: bool = False) -> SessionStore:
    """The store `--store` names (or $WARMLOOP_STORE, or the default SQLite file), closed
    when the command ends; an unusable store is a one-line error. A command that only reads
    passes `read_only`: it never writes to the store (nor creates one)."""
    try:
        opened = open_store(store, read_only=read_only)
    except WarmloopError as exc:
        fail(str(exc))
    click.get_current_context().call_on_close(opened.close)
    return opened


def load_session(store: SessionStore, name: str) -> StoredSession:
    """Stored session `name`; a missing one is a one-line error saying how to start it."""
    try:
        stored = store.load(name)
    except WarmloopError as exc:
        fail(str(exc))
    if stored is None:
        fail(
            f"no session {name!r} in {store.location}; `warmloop sessions` lists them, "
            "`warmloop run --session NAME` starts one"
        )
    return stored
