# mypy: ignore-errors
"""LangGraph's prebuilt ReAct agent with langchain-anthropic on the Messages API, one task.
Runs in the corpus venv."""

import os

from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

from benchmarks.framework_corpus.script import SYSTEM, run_tool, task_prompt


@tool
def read_file(path: str) -> str:
    """Read a file of the repository and return its text."""
    return run_tool("read_file", path)


@tool
def search(query: str) -> str:
    """Search the repository for a word; returns matching lines with file names."""
    return run_tool("search", query)


@tool
def calc(expression: str) -> str:
    """Evaluate an arithmetic expression and return the number."""
    return run_tool("calc", expression)


model = ChatAnthropic(
    model="claude-sonnet-4-6", base_url=os.environ["BASE_URL"], api_key="sk-loopback"
)
agent = create_react_agent(model, [read_file, search, calc], prompt=SYSTEM)
state = agent.invoke(
    {"messages": [("user", task_prompt("graph-claude"))]}, config={"recursion_limit": 100}
)
print(state["messages"][-1].content)
