"""Tools and typed outputs: the agent calls a Python function, then submits its outputs,
validated against a pydantic model. Runs offline on the scripted model; swap in
`resolve_model("anthropic:claude-sonnet-4-6")` for a real one."""

from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, call, tool


@tool
def population(city: str) -> int:
    """Return how many people live in a city."""
    return {"Paris": 2_102_650, "Lyon": 522_250}.get(city, 0)


class Answer(BaseModel):
    city: str
    people: int


model = ScriptedModel(  # what a real model would answer, step by step
    [
        call("population", city="Paris"),
        call("population", city="Lyon"),
        call("submit", city="Paris", people=2_102_650),
    ]
)
agent = Agent(model, [population], outputs=Answer)
run = agent.run_sync("Which is bigger, Paris or Lyon, and how many live there?")

for step in run.trajectory:
    print(f"step {step.step}: {step.tool}({step.arguments}) -> {step.observation}")
print(f"answer: {run.outputs.city} ({run.outputs.people:,} people)")
print(f"requests: {len(run.requests)}, cache hit rate: {run.cache_hit_rate:.0%}")
