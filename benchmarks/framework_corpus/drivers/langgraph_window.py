# mypy: ignore-errors
"""LangGraph's prebuilt ReAct agent with a sliding window: a `pre_model_hook` that keeps the
last turns with langchain-core's `trim_messages` (the pattern LangGraph documents for
managing message history), on Chat Completions. The oldest turns drop out as the task
goes on, so the task is named in the system prompt. Runs in the corpus venv."""

import os

from langchain_core.messages import trim_messages
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

from benchmarks.framework_corpus.script import SYSTEM, run_tool, task_prompt

TASK = "window"
KEEP = 10
"""Messages the window keeps, the system prompt aside."""


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


def window(state):
    kept = trim_messages(
        state["messages"],
        strategy="last",
        token_counter=len,
        max_tokens=KEEP,
        start_on=("human", "ai"),
        include_system=True,
    )
    return {"llm_input_messages": kept}


model = ChatOpenAI(model="gpt-5", base_url=os.environ["BASE_URL"] + "/v1", api_key="sk-loopback")
agent = create_react_agent(
    model,
    [read_file, search, calc],
    prompt=f"[task:{TASK}] {SYSTEM}",
    pre_model_hook=window,
)
state = agent.invoke({"messages": [("user", task_prompt(TASK))]}, config={"recursion_limit": 100})
print(state["messages"][-1].content)
