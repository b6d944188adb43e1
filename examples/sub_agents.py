"""Sub-agents: a planner sends three explorers at once (`as_tool(parallel=True)`). Each
explorer is a child of the planner's run: a row in its cost, usage that adds up. They share
one opening (the same tools and instructions; the task is their first user turn), and the
first goes alone until its usage shows the opening cached, so the others read it."""

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.providers.base import Rendered
from warmloop.providers.scripted import Reply


@tool
def look(area: str) -> str:
    """Look at an area of the code.

    Args:
        area: Where to look.
    """
    return f"{area}: three functions, one of them 400 lines long"


def explore(rendered: Rendered) -> Reply:
    """An explorer's reply: look at its task's area, then say what it saw."""
    messages = rendered.payload["messages"]
    task = messages[1]["content"]
    if messages[-1]["role"] == "user":
        return call("look", area=task)
    return call("submit", answer=f"{task}: split the long function")


explorer = Agent(
    ScriptedModel([explore] * 6, name="anthropic:claude-sonnet-4-6"),
    [look],
    name="explorer",
    instructions="Explore the part of the code you are given; answer in one line. " * 40,
)
planner = Agent(
    ScriptedModel(
        [
            call("explore", tasks=["the lexer", "the parser", "the printer"]),
            call("submit", answer="Split the three long functions, the parser first."),
        ],
        name="anthropic:claude-sonnet-4-6",
    ),
    [explorer.as_tool("explore", parallel=True)],
    name="planner",
)
run = planner.run_sync("Plan the refactor.")
print("plan:", run.output)
for child in run.children:
    assert child.run is not None
    first = child.run.requests[0].usage
    print(f"{child.agent} on {child.task}: read {first.cache_read_tokens} tokens first")
print("requests in the tree:", run.cost().tree_requests)
print("tree usage:", run.tree_usage.prompt_tokens, "prompt tokens")
