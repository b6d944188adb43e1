"""The agents a fleet's workers know by name (`warmloop worker --agents fleet_agents:registry`),
for `fleet_batch.py`. A worker builds each agent once and runs its tasks on it."""

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.fleet.agent_registry import AgentRegistry

registry = AgentRegistry()


@tool
def triage(ticket: str) -> str:
    """Return a ticket's priority."""
    return "high" if "down" in ticket else "low"


@registry.agent("triage")
def make_triage() -> Agent:
    # A real fleet uses resolve_model("anthropic:claude-sonnet-4-6") here; the scripted
    # model holds the replies of the batch's three tasks.
    steps = [call("triage", ticket="site is down"), call("submit", answer="high")]
    model = ScriptedModel(steps * 3)
    return Agent(model, [triage])
