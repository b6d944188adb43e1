# mypy: ignore-errors
"""smolagents' ToolCallingAgent with its OpenAI server model on Chat Completions, one task.
Runs in the corpus venv."""

import os

from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from benchmarks.framework_corpus.script import run_tool, task_prompt


@tool
def read_file(path: str) -> str:
    """Read a file of the repository and return its text.

    Args:
        path: the file's path in the repository.
    """
    return run_tool("read_file", path)


@tool
def search(query: str) -> str:
    """Search the repository for a word; returns matching lines with file names.

    Args:
        query: the word to look for.
    """
    return run_tool("search", query)


@tool
def calc(expression: str) -> str:
    """Evaluate an arithmetic expression and return the number.

    Args:
        expression: the arithmetic to evaluate.
    """
    return run_tool("calc", expression)


model = OpenAIServerModel(
    model_id="gpt-5", api_base=os.environ["BASE_URL"] + "/v1", api_key="sk-loopback"
)
agent = ToolCallingAgent(tools=[read_file, search, calc], model=model, max_steps=30)
print(agent.run(task_prompt("smol")))
