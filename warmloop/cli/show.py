"""`warmloop show` and `warmloop export`: print saved work, a transcript file written by
`run --save` or a stored session (pretty, or as JSON)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import click

from warmloop.cli.console import console, json_text
from warmloop.cli.session_view import session_export, session_view
from warmloop.cli.shared import command_store, fail, load_session, store_option
from warmloop.cli.view import transcript_view
from warmloop.errors import TranscriptError, WarmloopError
from warmloop.messages import ID_PATTERN
from warmloop.transcript import Transcript

MAX_SHOW_BYTES = 32 * 2**20
"""The largest transcript file `show` reads (long sessions stay far below it)."""


@click.command()
@click.argument("target")
@store_option
def show(target: str, store: str | None) -> None:
    """Pretty-print a saved transcript FILE, or stored session NAME with each request's
    usage and each point where it was rewritten."""
    if Path(target).is_file() or not ID_PATTERN.fullmatch(target):
        show_file(Path(target))
        return
    opened = command_store(store, read_only=True)
    stored = load_session(opened, target)
    try:
        parts = session_view(
            stored, opened.requests(target), opened.rewrites(target), opened.archive(target)
        )
        out = console()
        for part in parts:
            out.print(part, soft_wrap=True)
    except WarmloopError as exc:
        fail(str(exc))


def show_file(file: Path) -> None:
    """Pretty-print a transcript saved with `warmloop run --save FILE`."""
    try:
        text = read_transcript_file(file)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        fail(f"cannot read {file} ({reason}); pass a file written by warmloop run --save")
    try:
        transcript = Transcript.load(text)
    except TranscriptError as exc:
        fail(
            f"{file} is not a readable warmloop transcript ({exc}); "
            "pass a file written by warmloop run --save"
        )
    out = console()
    for part in transcript_view(transcript):
        out.print(part, soft_wrap=True)


def read_transcript_file(file: Path) -> str:
    """The text of a transcript file, refusing (with `fail`) what no transcript is: not a
    regular file (opening a FIFO would block) or larger than MAX_SHOW_BYTES (a forged
    300 MB file took 2.4 GB to parse)."""
    info = file.stat()
    if not stat.S_ISREG(info.st_mode):
        fail(f"cannot read {file} (not a regular file); pass a file from warmloop run --save")
    if info.st_size > MAX_SHOW_BYTES:
        fail(
            f"{file} is {info.st_size / 2**20:,.0f} MiB, more than the "
            f"{MAX_SHOW_BYTES // 2**20} MiB a transcript file may have; it is not one "
            "warmloop wrote (Transcript.load reads any size)"
        )
    with file.open("rb") as handle:
        data = handle.read(MAX_SHOW_BYTES + 1)  # it may have grown since
    if len(data) > MAX_SHOW_BYTES:
        fail(f"{file} grew past {MAX_SHOW_BYTES // 2**20} MiB while it was read")
    return data.decode("utf-8")


@click.command()
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
    opened = command_store(store, read_only=True)
    stored = load_session(opened, name)
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
