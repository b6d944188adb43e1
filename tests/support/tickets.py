"""Runs whose answers say which run they belong to: each task names a ticket, the model
looks it up, then answers naming it. Concurrent runs of one agent (tests/providers/
test_concurrency.py, benchmarks/concurrency.py) show a reply that reached the wrong run.

`answer_for` is the model's side for `wire_servers.by_request`: a run's first request gets
the lookup, the request that carries the lookup's result gets the answer. Every run is
two requests."""

from __future__ import annotations

import re

from tests.support.fake_servers import Reply, ToolUse
from warmloop import Run, tool

FOUND = "record of"


@tool
def lookup(ticket: str) -> str:
    """Look a ticket up."""
    return f"{FOUND} {ticket}"


def task(n: int) -> str:
    """The task of run `n`."""
    return f"Look ticket-{n} up, then answer."


def answer_for(body: str) -> Reply:
    """The reply to a request whose body is `body` (see the module docstring)."""
    ticket = re.search(r"ticket-(\d+)", body)
    assert ticket is not None, "every request carries its run's task"
    if FOUND in body:
        return ToolUse("submit", {"answer": f"answer {ticket[1]}"})
    return ToolUse("lookup", {"ticket": f"ticket-{ticket[1]}"})


def answered(run: Run) -> str:
    """The run's answer."""
    return str(run.outputs.model_dump()["answer"])
