"""Handoffs (the OpenAI Agents SDK's `handoffs=`): an agent passes its conversation to another,
which goes on with it to the end. The model sees a tool per target, `transfer_to_<name>`;
calling it ends the caller's steps (the call is answered "Transferred", any later call of
the turn is not run), and the target runs on the same conversation (a fork: the same
routing key, every message so far), its instructions given in the turn that hands it on,
with the run's deps. The caller's `Run` is the conversation's end: the target's outputs and
transcript, the target's run a row of `run.children` (`kind="handoff"`), its
`handed_to` the agent that finished.

The cache: the conversation's bytes so far are the caller's, so a target with the same
tools and outputs reads them all; a target with other tools changes the tool block, which
providers put first, so its first request writes the conversation once (the prefix guard
reports it, as it should). Handing on within one toolbox (an agent per mode) is the way to
keep the cache.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from warmloop.agent.result import Run
from warmloop.errors import ConfigurationError
from warmloop.tools.context import RunContext
from warmloop.tools.tool import Tool, ToolFunction
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript

TRANSFERRED = "Transferred to {name}; it goes on from here."
NOT_RUN = "Not executed: the conversation was handed to {name}."


@runtime_checkable
class Target(Protocol):
    """What a handoff needs of the agent it hands on to (an `Agent` is one)."""

    name: str | None
    instructions: str

    async def run(
        self, task: str, *, history: Transcript | None = ..., deps: Any = ...
    ) -> Run[Any]: ...


@dataclass(frozen=True)
class Handoff:
    """A handoff to `agent`, as the model sees it: a tool named `tool_name` with
    `tool_description`; `on_handoff(ctx)` is called as it happens (the run's context)."""

    agent: Target
    tool_name: str
    tool_description: str
    on_handoff: Callable[[RunContext[Any]], object] | None = None

    def tool(self) -> Tool:
        """The tool the model calls to hand on (never run: the run acts on its call)."""

        def transfer() -> str:
            return TRANSFERRED.format(name=self.agent_name)

        return Tool.from_function(transfer, name=self.tool_name, description=self.tool_description)

    @property
    def agent_name(self) -> str:
        return self.agent.name or self.tool_name

    def task(self) -> str:
        """The turn that hands the conversation on: the target's instructions, since its
        system prompt is the caller's (the conversation's first message, never rewritten)."""
        return (
            f"The conversation is now handed to {self.agent_name}; from here on, follow "
            f"these instructions:\n{self.agent.instructions}"
        )


def handoff(
    agent: Target,
    *,
    tool_name_override: str | None = None,
    tool_description_override: str | None = None,
    on_handoff: Callable[[RunContext[Any]], object] | None = None,
) -> Handoff:
    """A handoff to `agent` (the OpenAI Agents SDK's `handoff()`): the tool is
    `transfer_to_<agent name>` unless `tool_name_override` names it."""
    name = tool_name_override or default_tool_name(agent)
    about = tool_description_override or (
        f"Hand this conversation to the {agent.name or name} agent, which goes on with it."
    )
    if on_handoff is not None and not callable(on_handoff):
        raise ConfigurationError(f"on_handoff must be a function, got {on_handoff!r}")
    return Handoff(agent, name, about, on_handoff)


def default_tool_name(agent: Target) -> str:
    """`transfer_to_<name>`, the agent's name in lower case with `_` for anything else."""
    if not agent.name:
        raise ConfigurationError(
            "a handoff needs the target agent's name (Agent(name=...)) or tool_name_override="
        )
    return "transfer_to_" + re.sub(r"[^a-z0-9_]+", "_", agent.name.lower()).strip("_")


def handoffs_by_tool(given: Iterable[object]) -> dict[str, Handoff]:
    """`handoffs=` as given (agents or `handoff(...)`s), by tool name."""
    found: dict[str, Handoff] = {}
    for item in given:
        made = item if isinstance(item, Handoff) else handoff(_target(item))
        if made.tool_name in found:
            raise ConfigurationError(f"two handoffs share the tool name {made.tool_name!r}")
        found[made.tool_name] = made
    return found


def _target(item: object) -> Target:
    if not isinstance(item, Target):
        raise ConfigurationError(
            f"handoffs= takes agents and handoff(...)s, got {type(item).__name__}"
        )
    return item


def with_handoff_tools(
    tools: Iterable[Tool | ToolFunction] | Toolbox, handoffs: Mapping[str, Handoff]
) -> Iterable[Tool | ToolFunction] | Toolbox:
    """An agent's tools with a tool per handoff after them (a list of tools only)."""
    if not handoffs:
        return tools
    if isinstance(tools, Toolbox):
        raise ConfigurationError(
            "with handoffs=, pass tools as a list: the handoff tools join them"
        )
    return [*tools, *(h.tool() for h in handoffs.values())]
