"""A deterministic 30-step agent session used to check every wire format (issue 3).

Each provider test turns these abstract steps into responses shaped as that provider
documents them, runs an Agent over them through the real SDK, and captures the wire.
The session has ok tool calls, a tool error (bad arguments), an unknown tool, a tool that
raises, parallel calls, reasoning on some turns, a mid-run notice (the loop's
"one step left" notice before the last step), and a final submit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from warmloop.tools.tool import Tool, tool

STEPS = 30


@dataclass(frozen=True)
class Step:
    """One model turn: optional text and reasoning, and (tool name, arguments) calls."""

    text: str = ""
    reasoning: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = field(default=())


@tool
def lookup(key: str) -> str:
    """Look up a key in the catalog and return its value."""
    return f"value of {key}: " + "x" * (len(key) * 7 % 50)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(errors_to_model=True)
def explode(reason: str) -> str:
    """A tool that always fails (to exercise tool errors), told to the model."""
    raise RuntimeError(f"exploded: {reason}")


TOOLS: list[Tool] = [lookup, add, explode]


def steps(n: int = STEPS) -> list[Step]:
    """`n` steps: the last one submits; the rest cycle through the interesting cases."""
    out: list[Step] = []
    for i in range(n - 1):
        case = i % 6
        if case == 0:
            out.append(Step(calls=(("lookup", {"key": f"k{i}"}),)))
        elif case == 1:
            out.append(
                Step(reasoning=f"I should add {i} and 1.", calls=(("add", {"a": i, "b": 1}),))
            )
        elif case == 2:
            out.append(Step(text="Trying with a string.", calls=(("add", {"a": "x"}),)))
        elif case == 3:
            out.append(Step(calls=(("lookup", {"key": f"p{i}"}), ("add", {"a": 1, "b": i}))))
        elif case == 4:
            out.append(Step(calls=(("no_such_tool", {}),)))
        else:
            out.append(Step(reasoning="Let me see it fail.", calls=(("explode", {"reason": "x"}),)))
    out.append(Step(text="Done.", calls=(("submit", {"answer": "finished"}),)))
    return out
