"""warmloop's own loop on the chat wire, one task, every default: the row the frameworks
stand beside. Runs in the project's environment (not the corpus venv)."""

import os

from benchmarks.framework_corpus.script import DESCRIPTIONS, SYSTEM, run_tool, task_prompt
from warmloop import Agent, Tool, resolve_model

model = resolve_model(
    "openai-chat:gpt-5", base_url=os.environ["BASE_URL"] + "/v1", api_key="sk-loopback"
)


def read_file(path: str) -> str:
    return run_tool("read_file", path)


def search(query: str) -> str:
    return run_tool("search", query)


def calc(expression: str) -> str:
    return run_tool("calc", expression)


tools = [
    Tool.from_function(function, description=DESCRIPTIONS[function.__name__])
    for function in (read_file, search, calc)
]
agent = Agent(model, tools, instructions=SYSTEM)
print(agent.run_sync(task_prompt("warmloop-chat")).outputs)
