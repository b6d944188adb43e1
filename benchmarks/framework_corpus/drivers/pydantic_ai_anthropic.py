# mypy: ignore-errors
"""pydantic-ai on the Anthropic Messages API, one task. Runs in the corpus venv."""

import os

from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from benchmarks.framework_corpus.script import SYSTEM, run_tool, task_prompt

model = AnthropicModel(
    "claude-sonnet-4-6",
    provider=AnthropicProvider(api_key="sk-loopback", base_url=os.environ["BASE_URL"]),
)
agent = Agent(model, system_prompt=SYSTEM)


@agent.tool_plain
def read_file(path: str) -> str:
    """Read a file of the repository and return its text."""
    return run_tool("read_file", path)


@agent.tool_plain
def search(query: str) -> str:
    """Search the repository for a word; returns matching lines with file names."""
    return run_tool("search", query)


@agent.tool_plain
def calc(expression: str) -> str:
    """Evaluate an arithmetic expression and return the number."""
    return run_tool("calc", expression)


print(agent.run_sync(task_prompt("pydantic")).output)
