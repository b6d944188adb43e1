"""The scripted task every framework runs: three tools with deterministic answers, and the
model's side of the loop (which tool to call at each step, then the final answer).

Standard library only: the framework drivers import it from their own virtual environment.
A task is named in its prompt as `[task:NAME]`; each tool answer carries a tag
`[[obs:...]]` naming its call, so the loopback server knows how far a task has got from
the request alone (the latest step whose answer it holds), whatever the wire format.
"""

from __future__ import annotations

import hashlib
import json
import re

STEPS = 16
"""Tool calls per task before the final answer."""
SUBTASK_STEPS = 4
"""Tool calls of a subagent's task (a task whose name ends in `-sub`)."""
DELEGATE = "delegate"
DELEGATE_AT = 2
"""The step at which a parent whose tools offer `delegate` hands a subtask to a subagent."""
TOOLS = ("read_file", "search", "calc")
TASK_TAG = re.compile(r"\[task:([a-z0-9-]+)\]")
SYSTEM = (
    "You are a careful code-review assistant. Use the tools to read files, search the "
    "repository and compute figures; answer only from what the tools return. "
    + "Conventions of this repository: modules are small, functions are pure where "
    "possible, and every public name has a docstring. " * 6
)
DESCRIPTIONS = {
    "read_file": "Read a file of the repository and return its text.",
    "search": "Search the repository for a word; returns matching lines with file names.",
    "calc": "Evaluate an arithmetic expression and return the number.",
}
ARGUMENT = {"read_file": "path", "search": "query", "calc": "expression", "delegate": "input"}


def task_prompt(name: str) -> str:
    """The user's task, tagged so the server can tell tasks apart."""
    return (
        f"[task:{name}] Review the module `{name}.py`: read it and its neighbours, search "
        "for its callers, and compute how many lines change. Report one paragraph."
    )


def steps(task: str) -> int:
    """Tool calls the task makes before its final answer."""
    return SUBTASK_STEPS if task.endswith("-sub") else STEPS


def step_call(task: str, step: int, delegate: bool = False) -> tuple[str, str]:
    """The tool and its one string argument the model calls at `step` (from 0); with a
    `delegate` tool, the subtask at `DELEGATE_AT`."""
    if delegate and step == DELEGATE_AT:
        return DELEGATE, task_prompt(f"{task}-sub")
    tool = TOOLS[step % len(TOOLS)]
    if tool == "read_file":
        return tool, f"src/{task}/part_{step:02d}.py"
    if tool == "search":
        return tool, f"{task}_symbol_{step:02d}"
    return tool, f"{step + 3} * {step + 7} + {len(task)}"


def _tag(tool: str, argument: str) -> str:
    return hashlib.sha256(f"{tool}|{argument}".encode()).hexdigest()[:8]


def answer_tag(task: str, step: int, delegate: bool = False) -> str:
    """The tag the answer to `step`'s call carries (a subagent's: its final answer's)."""
    tool, argument = step_call(task, step, delegate)
    if tool == DELEGATE:
        return f"[[obs:{_tag('final', f'{task}-sub')}]]"
    return f"[[obs:{_tag(tool, argument)}]]"


def run_tool(tool: str, argument: str) -> str:
    """A tool's deterministic answer (about 1-3 kB, a calculation less), tagged with its call."""
    tag = f"[[obs:{_tag(tool, argument)}]]"
    if tool == "calc":
        numbers = [int(n) for n in re.findall(r"[0-9]+", argument)]
        value = numbers[0] * numbers[1] + numbers[2] if len(numbers) == 3 else 0
        return f"{tag} {argument} = {value}"
    if tool == "search":
        lines = [f"src/mod_{i}.py:{10 * i + 3}: uses {argument}() in a loop" for i in range(24)]
        return tag + "\n" + "\n".join(lines)
    body = "\n".join(
        f"def helper_{i}(value: int) -> int:\n    return value * {i} + {len(argument)}"
        for i in range(40)
    )
    return f"{tag} {argument}\n{body}"


def final_answer(task: str) -> str:
    """The model's last reply for a task; tagged like a tool answer, as a subagent's reply
    is its parent's tool answer."""
    return (
        f"[[obs:{_tag('final', task)}]] The module {task}.py is reviewed: {steps(task)} tool "
        "results read, nothing to change."
    )


def progress(text: str, delegate: bool = False) -> tuple[str | None, int]:
    """From a request's text: its task (the first tag) and how many steps are done: one more
    than the latest step whose answer it holds, so a window that drops old turns still
    counts right."""
    found = TASK_TAG.search(text)
    if found is None:
        return None, 0
    task = found.group(1)
    done = [k + 1 for k in range(steps(task)) if answer_tag(task, k, delegate) in text]
    return task, max(done, default=0)


def arguments_json(tool: str, argument: str) -> str:
    """The call's arguments as the JSON object a tool-calling API carries."""
    return json.dumps({ARGUMENT[tool]: argument})
