# mypy: ignore-errors
"""openai-agents on Chat Completions with a subagent: the parent's `delegate` tool is
another agent (`Agent.as_tool`), whose own conversation runs in the middle of the parent's.
Runs in the corpus venv."""

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
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
    model = OpenAIChatCompletionsModel(model="gpt-5", openai_client=client)
    helper = Agent(
        name="helper",
        instructions="You review one module for a colleague. " + SYSTEM,
        tools=[read_file, search, calc],
        model=model,
    )
    delegate = helper.as_tool(
        tool_name="delegate", tool_description="Hand a module's review to a helper agent."
    )
    agent = Agent(
        name="reviewer",
        instructions=SYSTEM,
        tools=[read_file, search, calc, delegate],
        model=model,
    )
    result = await Runner.run(agent, task_prompt("parent"), max_turns=40)
    print(result.final_output)


asyncio.run(main())
