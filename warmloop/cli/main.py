"""The `warmloop` command: the group every verb is added to. Verb modules define plain
click commands and never import this one, so the imports go one way."""

from __future__ import annotations

import click

from warmloop.cli.audit import audit, record
from warmloop.cli.fleet import batch, worker
from warmloop.cli.fleet_workers import fleet
from warmloop.cli.options import CliContext
from warmloop.cli.proxy import proxy
from warmloop.cli.run import resume, run
from warmloop.cli.sessions import sessions
from warmloop.cli.show import export, show


@click.group()
@click.version_option(package_name="warmloop")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Tool-using LLM agents that keep the provider's prompt cache warm."""
    ctx.ensure_object(CliContext)


main.add_command(run)
main.add_command(resume)
main.add_command(sessions)
main.add_command(show)
main.add_command(export)
main.add_command(proxy)
main.add_command(record)
main.add_command(audit)
main.add_command(worker)
main.add_command(batch)
main.add_command(fleet)
