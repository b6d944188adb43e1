"""The `warmloop` command: the group every verb is added to. Verb modules define plain
click commands and never import this one, so the imports go one way.

Each verb's module is imported only when that verb runs (click's documented lazy-loading
pattern): `warmloop --help` lists the verbs from `VERBS` without importing any of them,
so it loads no provider SDK, HTTP client or agent (the audit and the proxy are often
started per file or per shell). A test holds each listed line to the verb's own help.
"""

from __future__ import annotations

import importlib

import click

VERBS: dict[str, tuple[str, str]] = {
    "run": (
        "warmloop.cli.run:run",
        (
            "Run TASK with read-only tools over a workspace, or with your own agent "
            "(--agent), and show each step as it happens (with --json: print one JSON object "
            "when it ends)."
        ),
    ),
    "resume": (
        "warmloop.cli.run:resume",
        (
            "Continue stored session NAME with the follow-up TASK (its cache is reused if "
            "warm); with --agent, with the agent that made it (its tools checked against the "
            "session's)."
        ),
    ),
    "sessions": (
        "warmloop.cli.sessions:sessions",
        (
            "List stored sessions: model, steps, tokens, cost, idle time, and whether the "
            "provider's cache is probably still warm."
        ),
    ),
    "show": (
        "warmloop.cli.show:show",
        (
            "Pretty-print a saved transcript FILE, or stored session NAME with each request's"
            " usage and each point where it was rewritten."
        ),
    ),
    "export": (
        "warmloop.cli.show:export",
        (
            "Print stored session NAME as JSON: the transcript file format (for `show FILE`, "
            "`Transcript.load`), or with --full everything stored about it."
        ),
    ),
    "proxy": (
        "warmloop.cli.proxy:proxy",
        (
            "Proxy model requests on 127.0.0.1 to the upstream API, adding cache breakpoints "
            "and routing keys where the client sent none; never what the model reads."
        ),
    ),
    "record": (
        "warmloop.cli.audit:record",
        (
            "Proxy model requests on 127.0.0.1 to the upstream API and log each one (body, "
            "time, usage) for `warmloop audit`."
        ),
    ),
    "audit": (
        "warmloop.cli.audit:audit",
        (
            "Explain a request log (from `warmloop record`, or JSONL of raw request bodies): "
            "per request what the cache served, where the prefix moved and why, and what it "
            "cost."
        ),
    ),
    "worker": (
        "warmloop.cli.fleet:worker",
        "Run fleet tasks from the queue until stopped (Ctrl-C or SIGTERM).",
    ),
    "batch": (
        "warmloop.cli.fleet:batch",
        "Submit a batch of tasks (JSONL) to the fleet and follow it.",
    ),
    "fleet": (
        "warmloop.cli.fleet_workers:fleet",
        "Look at the fleet's workers.",
    ),
}
"""Each verb: `"module:attribute"` of its command, and its help's first sentence (what
`--help` lists it with, cut to the terminal's width as click cuts it)."""


def load_verb(name: str) -> click.Command:
    """The command of verb `name`, its module imported now."""
    module, _, attribute = VERBS[name][0].partition(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command)
    return command


class Verbs(click.Group):
    """A group whose verbs are imported when one runs, never to list them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load_verb(cmd_name) if cmd_name in VERBS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(name, _cut(name, limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _cut(name: str, limit: int) -> str:
    """Verb `name`'s help line cut to `limit` as click cuts a loaded command's."""
    return click.Command(name, help=VERBS[name][1]).get_short_help_str(limit)


@click.group(cls=Verbs)
@click.version_option(package_name="warmloop")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Tool-using LLM agents that keep the provider's prompt cache warm."""
    from warmloop.cli.shared import CliContext  # a verb runs: its context, loaded now

    ctx.ensure_object(CliContext)
