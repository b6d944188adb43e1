# mypy: ignore-errors
"""openai-agents on the Responses API: two tasks run at once by one agent (two
conversations interleaved in one log, same instructions and tools). Runs in the corpus venv."""

import asyncio
import os

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from benchmarks.framework_corpus.script import SYSTEM, run_tool, task_prompt


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository and return its text."""
    return run_tool("read_file", path)


@function_tool
def search(query: str) -> str:
    """Search the repository for a word; returns matching lines with file names."""
    return run_tool("search", query)


@function_tool
def calc(expression: str) -> str:
    """Evaluate an arithmetic expression and return the number."""
    return run_tool("calc", expression)


async def main() -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=os.environ["BASE_URL"] + "/v1", api_key="sk-loopback")
    agent = Agent(
        name="reviewer",
        instructions=SYSTEM,
        tools=[read_file, search, calc],
        model=OpenAIResponsesModel(model="gpt-5", openai_client=client),
    )
    results = await asyncio.gather(
        *(Runner.run(agent, task_prompt(name), max_turns=40) for name in ("alpha", "beta"))
    )
    for result in results:
        print(result.final_output)


asyncio.run(main())
