"""`warmloop record` and `warmloop audit`: see what a cache really served, and why not more."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
from rich.text import Text

from warmloop.audit.page import render_page
from warmloop.audit.report import audit as audit_log
from warmloop.audit.report import to_json
from warmloop.audit.terminal import report_view
from warmloop.cli.console import console as safe_console
from warmloop.cli.console import json_text
from warmloop.cli.proxy import (
    diagnose_option,
    limit_options,
    limits_of,
    port_option,
    say_undiagnosable,
    serve,
    upstream_option,
)
from warmloop.cli.shared import fail
from warmloop.errors import WarmloopError
from warmloop.exchange.log import iter_log
from warmloop.facts.price_table import PRICES_ENV, prices_for
from warmloop.proxy.server import Proxy
from warmloop.regular import open_regular

CHUNK = 1 << 16
"""Characters of `--json` output escaped and written at once."""


@click.command()
@upstream_option(required=True)
@port_option
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("warmloop-requests.jsonl"),
    show_default=True,
    help="JSONL log to append to.",
)
@diagnose_option
@limit_options
def record(
    upstream: str,
    port: int,
    out: Path,
    diagnose: bool,
    max_body_mb: float,
    client_timeout: float,
    max_connections: int,
) -> None:
    """Proxy model requests on 127.0.0.1 to the upstream API and log each one (body, time,
    usage) for `warmloop audit`. Point your client's base URL at the printed address."""
    console = safe_console()
    try:
        limits = limits_of(max_body_mb, client_timeout, max_connections)
        recorder = Proxy(upstream, out, port=port, diagnose=diagnose, limits=limits)
    except WarmloopError as exc:
        fail(str(exc))
    if diagnose:
        say_undiagnosable(recorder, console)
    serve(recorder, console, f"recording to {out}")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-contained HTML report here.",
)
@click.option(
    "--provider",
    "providers",
    multiple=True,
    metavar="SPEC",
    help="Price under these models' cache rules (repeatable; default: four providers).",
)
@click.option(
    "--affinity",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="The affinity window of the router the log went through (a gateway's sticky "
    "sessions); a miss after a longer pause, inside the TTL, is named `affinity`.",
)
def audit(
    file: Path,
    as_json: bool,
    html_out: Path | None,
    providers: tuple[str, ...],
    affinity: float | None,
) -> None:
    """Explain a request log (from `warmloop record`, or JSONL of raw request bodies):
    per request what the cache served, where the prefix moved and why, and what it cost."""
    if html_out is not None and _same_file(html_out, file):
        fail(f"--html {html_out} is the log being audited; pass another path for the page")
    for spec in providers:
        if prices_for(spec) is None:
            fail(
                f"--provider {spec!r} has no prices in the table, so nothing can be priced "
                f"under it; pass a priced model such as anthropic:claude-sonnet-4-6 (or add "
                f"its prices with {PRICES_ENV})"
            )
    try:
        report = audit_log(
            iter_log(file), source=file.name, providers=providers or None, affinity=affinity
        )
    except WarmloopError as exc:
        fail(str(exc))
    if html_out is not None:
        try:
            write_page(html_out, render_page(report))
        except OSError as exc:
            fail(
                f"cannot write {html_out} ({exc.strerror}); pass --html a regular file in a "
                "writable place"
            )
    console = safe_console()
    if as_json:
        # Written in chunks: the report of a large log is as large as the log, and one
        # string of it (then its escaped copy) would double what the audit itself holds.
        encoder = json.JSONEncoder(indent=2, ensure_ascii=False)
        chunk: list[str] = []
        size = 0
        for piece in encoder.iterencode(to_json(report)):
            chunk.append(piece)
            size += len(piece)
            if size >= CHUNK:  # an escape is per character: no chunk splits one
                click.echo(json_text("".join(chunk)), nl=False)
                chunk, size = [], 0
        click.echo(json_text("".join(chunk)))
        return
    for part in report_view(report):
        console.print(part)
    if html_out is not None:
        console.print(Text(f"HTML report written to {html_out}", style="dim"))


def write_page(path: Path, page: str) -> None:
    """Write the HTML page to `path`, a regular file (a FIFO would block the audit until
    something read it; OSError says why not)."""
    fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    with open(fd, "w", encoding="utf-8") as out:
        out.write(page)


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links too); False if either is missing."""
    try:
        return a.samefile(b)
    except OSError:
        return False
