"""A tree of agents for the crash tests of replay keyed by content: a planner that sends one
`explore` call over eight areas (a fan-out of the explorer, `as_tool(parallel=True)`), then
submits. Each explorer looks at its area (the `look` tool) and submits. Scripted models
reply by what each request holds, so children may ask in any order and a resumed run gets
the same replies.

`look` appends `<area> <pid>` to the log (one write(2) a line, kept if the process dies)
as it starts, and for the areas in HANGING waits on the gate: a file the test holds an
exclusive lock on (flock), so those three explorers hang in their tool until the test
kills the process and lets go of the gate. `reverse=True` builds a planner whose `explore`
sends the areas in the opposite order (what a resumed tree's positions are worth: nothing).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from warmloop import Agent, RunContext, ScriptedModel, call, fan_out, tool
from warmloop.agent.delegation import child_session, content_key, stored_outputs
from warmloop.providers.base import Rendered
from warmloop.providers.scripted import Reply
from warmloop.sessions.store import SessionStore

AREAS = [f"area-{n}" for n in range(8)]
HANGING = {"area-5", "area-6", "area-7"}
PLAN = "Plan the refactor: explore every area first."


def explorer(log: Path | None = None, gate: Path | None = None) -> Agent:
    """The child agent (its replies and tool as described above)."""

    @tool
    def look(area: str) -> str:
        """Look at an area of the code.

        Args:
            area: Where to look.
        """
        if log is not None:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, f"{area} {os.getpid()}\n".encode())
            os.close(fd)
        if gate is not None and area in HANGING:
            with open(gate) as held:
                fcntl.flock(held, fcntl.LOCK_SH)  # waits while the test holds the gate
        return f"{area}: three functions"

    def reply(rendered: Rendered) -> Reply:
        messages = rendered.payload["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        if messages[-1]["role"] == "user":
            return call("look", area=task)
        return call("submit", answer=f"{task} explored")

    model = ScriptedModel([reply] * 64, name="anthropic:claude-sonnet-4-6")
    return Agent(model, [look], name="explorer", instructions="Explore the area you are given.")


def planner(child: Agent, *, reverse: bool = False) -> Agent:
    """The parent agent: one `explore` call over AREAS, then submit."""

    @tool
    async def explore(ctx: RunContext[None], tasks: list[str]) -> str:
        """Explore each area at once.

        Args:
            tasks: The areas.
        """
        runs = await fan_out(child, list(reversed(tasks)) if reverse else tasks)
        return json.dumps(sorted(str(run.output) for run in runs))

    def reply(rendered: Rendered) -> Reply:
        if rendered.payload["messages"][-1]["role"] == "user":
            return call("explore", tasks=AREAS)
        return call("submit", answer="planned")

    model = ScriptedModel([reply] * 8, name="anthropic:claude-sonnet-4-6")
    return Agent(model, [explore], name="planner", instructions="Plan with your explorers.")


def finished_children(store: SessionStore, parent_session: str) -> set[str]:
    """The areas whose explorer's result the store holds under `parent_session`."""
    child = explorer()
    done = set()
    for area in AREAS:
        found = store.load(child_session(parent_session, content_key(child, area)))
        transcript = found.transcript if found is not None else None
        if transcript is not None and stored_outputs(child, transcript) is not None:
            done.add(area)
    return done


def logged(log: Path) -> list[tuple[str, int]]:
    """Each `look` started, in order: (area, pid)."""
    if not log.exists():
        return []
    lines = [line.split() for line in log.read_text().splitlines() if line.strip()]
    return [(area, int(pid)) for area, pid in lines]
