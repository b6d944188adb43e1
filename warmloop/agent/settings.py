"""What a run reads of its agent: one declaration of the fields, taken as the run starts.

Each field is the `Agent` attribute of the same name, so `Settings.of(agent)` builds them
from that one list (no positional copy to keep in step with the agent)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Literal

from warmloop.agent.events import Event
from warmloop.agent.handoff import Handoff
from warmloop.facts.model_facts import ModelFacts
from warmloop.keepalive.pinger import KeepAlivePolicy
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.messages import Message
from warmloop.outputs import OutputCheck, Outputs
from warmloop.providers.base import Model
from warmloop.tools.invoke import MIN_RESULT_CHARS, WINDOW_SHARE, default_result_cap
from warmloop.tools.schema import ToolSpec
from warmloop.tools.toolbox import Toolbox


@dataclass(frozen=True)
class Settings:
    """What a run reads of its agent, taken as the run starts (the Agent's attributes)."""

    model: Model
    toolbox: Toolbox
    outputs: Outputs
    tool_specs: tuple[ToolSpec, ...]
    fingerprint: str
    instructions: str
    max_steps: int
    max_syntax_errors: int
    max_tool_retries: int
    max_result_chars: int | Literal["window"] | None
    on_message: Callable[[Message], None] | None
    maintenance: MaintenancePolicy | None
    on_maintenance: Callable[[MaintenanceEvent], None] | None
    keepalive: KeepAlivePolicy | None = None
    check_outputs: OutputCheck | None = None
    on_event: Callable[[Event], None] | None = None
    tool_errors_to_model: bool = False
    name: str | None = None
    handoffs: Mapping[str, Handoff] = field(default_factory=dict)

    @classmethod
    def of(cls, agent: object) -> Settings:
        """The settings of `agent` as it is now: each field its attribute of that name."""
        return cls(**{f.name: getattr(agent, f.name) for f in fields(cls)})

    def result_cap(self, facts: ModelFacts) -> int | None:
        """The cap on one tool result under `facts`: the smaller of the toolbox's own
        `max_result_chars` and the agent's, where "window" is a share of a known window (no
        cap while the window is only assumed). None: no cap."""
        caps = [c for c in (self.toolbox.max_result_chars, self._agent_cap(facts)) if c is not None]
        return min(caps) if caps else None

    def _agent_cap(self, facts: ModelFacts) -> int | None:
        if self.max_result_chars != "window":
            return self.max_result_chars
        if facts.window is None:
            return None
        # One result can never overflow the window: a share of it (tools/invoke.py); a
        # window too small to share still gets the smallest cap, not an error.
        return default_result_cap(max(facts.window, MIN_RESULT_CHARS * WINDOW_SHARE))
