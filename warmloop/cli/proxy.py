"""`warmloop proxy`: keep the cache of any agent warm by changing only its base URL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

import click
import httpx2
from rich.console import Console
from rich.text import Text

from warmloop.cli.console import console as safe_console
from warmloop.cli.interrupt import terminate_as_interrupt
from warmloop.cli.shared import fail
from warmloop.errors import WarmloopError
from warmloop.proxy.body import MAX_REQUEST_BYTES
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import CONVERSATION_CAP_USD, DAILY_CAP_USD, Caps
from warmloop.proxy.server import CLIENT_SECONDS, MAX_CONNECTIONS, Limits, Proxy
from warmloop.proxy.status import PAGE_PATH, SERVICE, STATUS_PATH

F = TypeVar("F", bound=Callable[..., Any])
STATUS_SECONDS = 10.0
"""How long `--status` waits for the proxy's page."""


def upstream_option(*, required: bool) -> Callable[[F], F]:
    """`--upstream URL`, the one API a proxy forwards to (`record` and `proxy`)."""
    return click.option(
        "--upstream",
        required=required,
        metavar="URL",
        help="The API to forward to, e.g. https://api.anthropic.com or https://api.openai.com.",
    )


port_option = click.option(
    "--port", type=click.IntRange(0, 65535), default=8788, show_default=True, help="Local port."
)
"""`--port N`, the local port a proxy serves on (`record` and `proxy`)."""
diagnose_option = click.option(
    "--diagnose",
    is_flag=True,
    help="Ask the provider for its own cache verdict on every request (adds the documented "
    "diagnostic fields; api.anthropic.com and api.openai.com only).",
)
"""`--diagnose` (`record` and `proxy`)."""


def limit_options(command: F) -> F:
    """`--max-body-mb`, `--client-timeout`, `--max-connections` (`record` and `proxy`)."""
    for option in (
        click.option(
            "--max-connections",
            type=click.IntRange(1),
            default=MAX_CONNECTIONS,
            show_default=True,
            help="Client connections served at once; one more is answered 503.",
        ),
        click.option(
            "--client-timeout",
            type=click.FloatRange(0, min_open=True),
            default=CLIENT_SECONDS,
            show_default=True,
            metavar="SECONDS",
            help="The longest a client may stay silent while its request is read.",
        ),
        click.option(
            "--max-body-mb",
            type=click.FloatRange(0, min_open=True),
            default=MAX_REQUEST_BYTES / 2**20,
            show_default=True,
            metavar="MIB",
            help="The largest request body taken (refused with 413 while reading past it).",
        ),
    ):
        command = option(command)
    return command


def limits_of(max_body_mb: float, client_timeout: float, max_connections: int) -> Limits:
    """The limits the options name (a `ConfigurationError` for one that is not finite)."""
    if max_body_mb != max_body_mb or max_body_mb == float("inf"):
        max_body_mb = -1.0  # refused below, by name
    return Limits(client_timeout, int(max_body_mb * 2**20), max_connections)


def say_undiagnosable(server: Proxy, console: Console) -> None:
    """Say so where `--diagnose` cannot apply to the upstream (any other host)."""
    if server.diagnoser is None:
        console.print(
            Text(
                f"--diagnose applies to https://api.anthropic.com and https://api.openai.com "
                f"only: requests to {server.upstream} go upstream as sent",
                style="yellow",
            ),
            soft_wrap=True,
        )


@click.command()
@upstream_option(required=False)
@port_option
@click.option(
    "--record",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Also append each model request to this JSONL log, for `warmloop audit`.",
)
@click.option(
    "--breakpoints/--no-breakpoints",
    default=True,
    show_default=True,
    help="Place cache breakpoints where the client placed none (Anthropic Messages; OpenAI "
    "Chat Completions on GPT-5.6 and later).",
)
@click.option(
    "--cache-key/--no-cache-key",
    default=True,
    show_default=True,
    help="Send a routing key per conversation where the client sent none (prompt_cache_key "
    "on api.openai.com, x-grok-conv-id on api.x.ai).",
)
@click.option(
    "--session-header",
    metavar="NAME",
    help="Send the conversation's id in this header (a self-hosted router's, such as "
    "X-Session-ID) where the client sent none.",
)
@click.option(
    "--guard/--no-guard",
    default=True,
    show_default=True,
    help="Report a request that moves its conversation's cached prefix, with its cause.",
)
@click.option(
    "--affinity",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="The affinity window of the router in front of the model, where it documents one: "
    "a miss after a longer pause inside the cache's TTL is named `affinity`.",
)
@diagnose_option
@click.option(
    "--keepalive/--no-keepalive",
    default=True,
    show_default=True,
    help="Keep a conversation's cache warm while its client is away, where a keep-alive "
    "costs less than the miss it saves (sent with the client's own key, held in memory).",
)
@click.option(
    "--keepalive-cap",
    type=click.FloatRange(0),
    default=CONVERSATION_CAP_USD,
    show_default=True,
    metavar="USD",
    help="The most one conversation's keep-alives may spend, in dollars.",
)
@click.option(
    "--keepalive-daily-cap",
    type=click.FloatRange(0),
    default=DAILY_CAP_USD,
    show_default=True,
    metavar="USD",
    help="The most all keep-alives may spend in a UTC day, in dollars.",
)
@click.option(
    "--status",
    "show_status",
    is_flag=True,
    help="Show the running proxy's conversations on --port (reuse, busts, dollars saved).",
)
@limit_options
def proxy(
    upstream: str | None,
    port: int,
    out: Path | None,
    breakpoints: bool,
    cache_key: bool,
    session_header: str | None,
    guard: bool,
    affinity: float | None,
    diagnose: bool,
    keepalive: bool,
    keepalive_cap: float,
    keepalive_daily_cap: float,
    show_status: bool,
    max_body_mb: float,
    client_timeout: float,
    max_connections: int,
) -> None:
    """Proxy model requests on 127.0.0.1 to the upstream API, adding cache breakpoints and
    routing keys where the client sent none; never what the model reads. Point your
    client's base URL at the printed address."""
    if show_status:
        print_status(port)
        return
    if upstream is None:
        fail("pass --upstream URL, the API to forward to, such as https://api.anthropic.com")
    try:
        fixes = Fixes(breakpoints, cache_key, session_header)
        caps = Caps(keepalive_cap, keepalive_daily_cap) if keepalive else None
        limits = limits_of(max_body_mb, client_timeout, max_connections)
        server = Proxy(
            upstream,
            out,
            port=port,
            fixes=fixes,
            guard=guard,
            diagnose=diagnose,
            keepalive=caps,
            name="warmloop proxy",
            limits=limits,
            affinity=affinity,
        )
    except WarmloopError as exc:
        fail(str(exc))
    console = safe_console()
    if diagnose:
        say_undiagnosable(server, console)
    logged = f"; logging to {out}" if out is not None else ""
    page = f"; live status at {server.url}{PAGE_PATH}"
    serve(server, console, f"proxying to {server.shown_upstream}{logged}{page}")


def serve(server: Proxy, console: Console, doing: str) -> None:
    """Print where to point the client and serve until Ctrl-C or SIGTERM, then close."""
    # SIGTERM (a service manager, `kill`) stops it as Ctrl-C does: the log is closed cleanly.
    # The handler is in place before the address is printed: a client (or a supervisor) may
    # act on that line at once.
    try:
        with terminate_as_interrupt():
            console.print(
                Text(f"{doing}: point your client at {server.url} (Ctrl-C stops)"),
                soft_wrap=True,
            )
            server.serve_forever()
    except KeyboardInterrupt:
        done = f"; requests are in {server.writer.path}" if server.writer is not None else ""
        console.print(Text(f"stopped{done}", style="dim"))
    finally:
        server.close()


def fetch_status(port: int) -> dict[str, Any]:
    """The status page of the proxy serving on 127.0.0.1:`port`; exits with a message
    when nothing answers there, or something that is not a warmloop proxy does."""
    url = f"http://127.0.0.1:{port}{STATUS_PATH}"
    try:
        page = httpx2.get(url, timeout=STATUS_SECONDS, trust_env=False).json()
    except (httpx2.HTTPError, ValueError) as exc:
        fail(
            f"no warmloop proxy answered on 127.0.0.1:{port} ({type(exc).__name__}); start "
            "one with `warmloop proxy --upstream URL`, or pass the --port it serves on"
        )
    except RecursionError:
        page = None
    if not _is_status(page):
        fail(
            f"the server on 127.0.0.1:{port} is not a warmloop proxy (its {STATUS_PATH} is "
            "not the proxy's page); pass the --port `warmloop proxy` serves on"
        )
    return page


def _is_status(page: object) -> TypeGuard[dict[str, Any]]:
    """Whether `page` is the proxy's status page, in the fields `print_status` reads."""
    if not isinstance(page, dict) or page.get("service") != SERVICE:
        return False
    rows = page.get("by_conversation")
    counts = ("conversations", "requests", "busts")
    return (
        all(isinstance(page.get(k), int) for k in counts)
        and isinstance(page.get("saved_usd"), int | float)
        and isinstance(rows, list)
        and all(
            isinstance(r, dict)
            and all(isinstance(r.get(k), int) for k in ("requests", "busts"))
            and isinstance(r.get("id"), str)
            and isinstance(r.get("format"), str)
            for r in rows
        )
    )


def print_status(port: int) -> None:
    """Print the status page of the proxy serving on 127.0.0.1:`port`."""
    page = fetch_status(port)
    console = safe_console()
    reuse = page.get("reuse")
    console.print(
        Text(
            f"{page['conversations']} conversations, {page['requests']} requests, "
            f"{page['busts']} busts, reuse {_share(reuse)}, "
            f"saved ${page['saved_usd']:.4f} by the breakpoints placed"
            + (
                f"; {page['keepalives']} keep-alives (${page['keepalive_usd']:.4f}) saved "
                f"${page['keepalive_saved_usd']:.4f} net"
                if "keepalives" in page
                else ""
            )
            + _misses(page.get("misses"), "; misses: ")
        ),
        soft_wrap=True,
    )
    for row in page["by_conversation"]:
        saved = row["saved_usd"]
        console.print(
            Text(
                f"  {row['id']} {row['format']}: {row['requests']} requests, {row['busts']} "
                f"busts, reuse {_share(row['reuse'])}"
                + (f", saved ${saved:.4f}" if saved is not None else "")
                + (f", {row['keepalives']} keep-alives" if row.get("keepalives") else "")
                + _misses(row.get("misses"), ", misses: ")
            ),
            soft_wrap=True,
        )


def _misses(value: object, lead: str) -> str:
    """Misses per kind as the page gives them (`no-cache-key 2 ($0.0123)`), after `lead`;
    nothing where there are none, or where the page's field is not shaped as the proxy's."""
    if not isinstance(value, dict) or not value:
        return ""
    said = []
    for kind, figures in value.items():
        if not isinstance(figures, dict) or not isinstance(figures.get("requests"), int):
            return ""
        usd = figures.get("lost_usd")
        dollars = f" (${usd:.4f})" if isinstance(usd, int | float) else ""
        said.append(f"{kind} {figures['requests']}{dollars}")
    return lead + ", ".join(said)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
