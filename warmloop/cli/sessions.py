"""The session commands, registered on the `warmloop` group: `resume NAME "follow-up"`,
`sessions`, `show NAME` (beside `show FILE`) and `export NAME`.

Each opens the store named by `--store` (or $WARMLOOP_STORE, or the default SQLite file in
the user's data directory) and closes it when the command ends.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from rich.text import Text

from warmloop.cli.console import json_text
from warmloop.cli.run import _stdout, fail, main, max_steps_option, run, workspace_option
from warmloop.cli.run import show as show_file
from warmloop.cli.session_view import session_cost, session_export, session_view, sessions_table
from warmloop.errors import WarmloopError
from warmloop.messages import ID_PATTERN
from warmloop.providers.redact import MASK
from warmloop.sessions.locate import STORE_VARIABLE, open_store
from warmloop.sessions.session import StoredSession
from warmloop.sessions.store import SessionStore

store_option = click.option(
    "--store",
    metavar="PATH|URL",
    envvar=STORE_VARIABLE,
    help="Session store: a SQLite file or a postgresql:// URL "
    "[default: sessions.db in the user data directory].",
)


def _open(store: str | None) -> SessionStore:
    """The store, closed when the command ends; an unusable store is a one-line error."""
    try:
        opened = open_store(store)
    except WarmloopError as exc:
        fail(str(exc))
    click.get_current_context().call_on_close(opened.close)
    return opened


def _load(store: SessionStore, name: str) -> StoredSession:
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


def resumable_spec(model: str) -> str:
    """The --model string that selects a stored session's model again (`local:gemma-...`
    is the embedded model, selected as `local`)."""
    return "local" if model.startswith("local:") else model


@main.command()
@click.argument("name")
@click.argument("task")
@click.option("--model", "model_spec", metavar="SPEC", help="Model [default: the session's].")
@workspace_option
@max_steps_option
@click.option("--save", type=click.Path(dir_okay=False, path_type=Path), help="Also save here.")
@store_option
@click.pass_context
def resume(
    ctx: click.Context,
    name: str,
    task: str,
    model_spec: str | None,
    workspace: Path,
    max_steps: int,
    save: Path | None,
    store: str | None,
) -> None:
    """Continue stored session NAME with the follow-up TASK (its cache is reused if warm)."""
    stored = _load(_open(store), name)
    if stored.transcript is None and model_spec is None:
        fail(f"session {name!r} has no step stored yet; pass --model to run it")
    spec = model_spec or resumable_spec(stored.info.meta.model)
    if model_spec is None and MASK in spec:
        fail(
            f"session {name!r} ran on {spec}, whose credentials are never stored; "
            "pass --model with the full server URL"
        )
    ctx.invoke(
        run,
        task=task,
        model_spec=spec,
        workspace=workspace,
        max_steps=max_steps,
        save=save,
        session=name,
        store=store,
    )


@main.command()
@store_option
def sessions(store: str | None) -> None:
    """List stored sessions: model, steps, tokens, cost, idle time, and whether the
    provider's cache is probably still warm."""
    opened = _open(store)
    try:
        infos = opened.sessions()
        rows = [(info, session_cost(info, opened.requests(info.id))) for info in infos]
    except WarmloopError as exc:
        fail(str(exc))
    console = _stdout()
    if not rows:
        console.print(Text(f"no sessions in {opened.location}", style="dim"))
        return
    console.print(sessions_table(rows, time.time(), opened.location))


@main.command("show")
@click.argument("target")
@store_option
@click.pass_context
def show(ctx: click.Context, target: str, store: str | None) -> None:
    """Pretty-print a saved transcript FILE, or stored session NAME with each request's
    usage and each point where it was rewritten."""
    if Path(target).is_file() or not ID_PATTERN.fullmatch(target):
        ctx.invoke(show_file, file=Path(target))
        return
    opened = _open(store)
    stored = _load(opened, target)
    try:
        parts = session_view(
            stored, opened.requests(target), opened.rewrites(target), opened.archive(target)
        )
        console = _stdout()
        for part in parts:
            console.print(part, soft_wrap=True)
    except WarmloopError as exc:
        fail(str(exc))


@main.command()
@click.argument("name")
@click.option(
    "--full",
    is_flag=True,
    help="Also the archive of replaced originals, the rewrite points and each request's usage.",
)
@store_option
def export(name: str, full: bool, store: str | None) -> None:
    """Print stored session NAME as JSON: the transcript file format (for `show FILE`,
    `Transcript.load`), or with --full everything stored about it."""
    opened = _open(store)
    stored = _load(opened, name)
    try:
        if full:
            data = session_export(
                stored, opened.requests(name), opened.rewrites(name), opened.archive(name)
            )
            text = json.dumps(data, ensure_ascii=False, indent=2)
        elif stored.transcript is None:
            fail(f"session {name!r} has no step stored yet")
        else:
            text = stored.transcript.dump()
    except WarmloopError as exc:
        fail(str(exc))
    click.echo(json_text(text))
