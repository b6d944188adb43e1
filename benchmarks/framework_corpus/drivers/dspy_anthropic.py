# mypy: ignore-errors
"""DSPy's `dspy.ReAct`, as in `dspy_react`, with its `dspy.LM` on Anthropic Messages: DSPy
places no `cache_control`, and each step's prompt is rebuilt from the signature (the task and
the whole trajectory in one user message, then the `[[ ## next_thought ## ]]` instructions),
so no step's write is ever read: the only block two steps share whole is the system prompt,
under Sonnet's 1,024-token minimum. DSPy's own cache is off, so every step is a real
request. Runs in the corpus venv."""

import os

# litellm's model price map from the wheel, not fetched from the network at import
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "true"

import dspy

from benchmarks.framework_corpus.script import SYSTEM, run_tool, task_prompt


def read_file(path: str) -> str:
    """Read a file of the repository and return its text."""
    return run_tool("read_file", path)


def search(query: str) -> str:
    """Search the repository for a word; returns matching lines with file names."""
    return run_tool("search", query)


def calc(expression: str) -> str:
    """Evaluate an arithmetic expression and return the number."""
    return run_tool("calc", expression)


class Review(dspy.Signature):
    __doc__ = SYSTEM

    task: str = dspy.InputField()
    answer: str = dspy.OutputField()


lm = dspy.LM(
    "anthropic/claude-sonnet-4-6",
    api_base=os.environ["BASE_URL"] + "/v1",
    api_key="sk-loopback",
    cache=False,  # every step a real request
    temperature=1.0,
    max_tokens=16000,
)
dspy.configure(lm=lm)
agent = dspy.ReAct(Review, tools=[read_file, search, calc], max_iters=30)
print(agent(task=task_prompt("dspy-anthropic")).answer)
