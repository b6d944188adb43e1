"""The text protocol for models without native tool calling: Thought / Action / Observation.

A step is written as

    Thought: <free text>
    Action: {"tool": "<name>", "arguments": {...}}

and the tool's answer comes back as a user turn starting with `Observation:`. The model's raw
text is kept byte-for-byte as the assistant turn; parsing only derives the tool call from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from warmloop.messages import (
    AssistantTurn,
    JsonValue,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.protocols.inline import inline_text
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.schema import ToolSpec

Role = Literal["system", "user", "assistant"]
ACTION = "Action:"
THOUGHT = "Thought:"
_ACTION = re.compile(re.escape(ACTION))
_ACTION_LINE = re.compile(r"^[ \t]*" + re.escape(ACTION), re.MULTILINE)
MAX_TRIES = 16
"""Candidate Actions tried per turn: a reply full of "Action:" costs bounded work."""


class ParseFailure(ValueError):
    """The model's text is not one Thought followed by one Action JSON object."""


def call_id(turn_index: int, index: int = 0) -> str:
    """Deterministic call ids: `call_<assistant turn>_<index>` (I4)."""
    return f"call_{turn_index}_{index}"


@dataclass(frozen=True)
class ExampleStep:
    """One step of a worked example; the observation is None on the final submit."""

    thought: str
    tool: str
    arguments: dict[str, JsonValue]
    observation: str | None = None


@dataclass(frozen=True)
class WorkedExample:
    """A short solved task, taught before the tools so a small model copies its shape."""

    task: str
    steps: tuple[ExampleStep, ...]

    def fits(self, tools: Sequence[ToolSpec]) -> bool:
        """Whether every call of the example is one these tools accept by name and keys."""
        specs = {spec.name: spec for spec in tools}
        for step in self.steps:
            spec = specs.get(step.tool)
            properties = spec.parameters.get("properties") if spec else None
            required = spec.parameters.get("required", []) if spec else []
            if not isinstance(properties, dict) or not isinstance(required, list):
                return False
            if not set(required) <= set(step.arguments) <= set(properties):
                return False
        return True

    def text(self) -> str:
        """The example as the model would write it, observations included."""
        lines = [f"Task: {self.task}"]
        for step in self.steps:
            lines.append(f"{THOUGHT} {step.thought}")
            lines.append(f"{ACTION} {action_json(step.tool, step.arguments)}")
            if step.observation is not None:
                lines.append(f"Observation: {step.observation}")
        return "\n".join(lines)


def action_json(tool: str, arguments: Mapping[str, JsonValue]) -> str:
    """An Action's JSON object, written the way the local grammar makes a model write it."""
    return json.dumps({"tool": tool, "arguments": arguments}, ensure_ascii=False)


# Examples for the common shapes of tool sets, taught when an agent's tools fit them: they
# use other files and names than any real task, so a model copies the shape, not answers.
EXAMPLES: tuple[WorkedExample, ...] = (
    WorkedExample(
        "Which function mails the invoice?",
        (
            ExampleStep(
                "I search the files for one word of the task, mails",
                "search",
                {"pattern": "mails"},
                "no matches for 'mails' under .\n"
                "closest definitions and lines by the words 'mail' (names split at _ and case, "
                "docstrings and comments; word endings ignored), definitions first:\n"
                "billing/mail.py:8: def send_invoice(order: Order) -> None  # Mail the "
                "invoice of an order, trying again on failure.",
            ),
            ExampleStep(
                "The search shows the function send_invoice in billing/mail.py",
                "submit",
                {"answer": "send_invoice"},
            ),
        ),
    ),
    WorkedExample(
        "What sender address do invoice emails use?",
        (
            ExampleStep(
                "I search the files for one word of the task, sender",
                "search",
                {"pattern": "sender"},
                'settings.toml:2: sender = "billing@example.com"',
            ),
            ExampleStep(
                "Line 2 of settings.toml sets the sender to billing@example.com",
                "submit",
                {"answer": "billing@example.com"},
            ),
        ),
    ),
    WorkedExample(
        "How many seats does room B2 have?",
        (
            ExampleStep(
                "I search the files for the room B2",
                "search",
                {"pattern": "B2"},
                "data/rooms.csv:3: B2,2,8",
            ),
            ExampleStep(
                "Room B2 is a row of data/rooms.csv, so I read it to see its columns",
                "read_file",
                {"path": "data/rooms.csv"},
                "data/rooms.csv: lines 1-3 of 3\n1 | room,floor,seats\n2 | A1,1,12\n3 | B2,2,8",
            ),
            ExampleStep(
                "Row 3 is room B2 and its seats column is 8",
                "submit",
                {"answer": "8"},
            ),
        ),
    ),
    WorkedExample(
        "How many times does send_invoice try to send a mail?",
        (
            ExampleStep(
                "I look up send_invoice, the name the task gives",
                "find_definition",
                {"name": "send_invoice"},
                "billing/mail.py:8: def send_invoice(order: Order) -> None\n"
                '  """Mail the invoice of an order, trying again on failure."""\n'
                "  uses: Order (billing/orders.py:3), MAX_TRIES (billing/limits.py:2)",
            ),
            ExampleStep(
                "send_invoice uses MAX_TRIES, so I look that up next",
                "find_definition",
                {"name": "MAX_TRIES"},
                "billing/limits.py:2: MAX_TRIES = 3",
            ),
            ExampleStep("MAX_TRIES in billing/limits.py is 3", "submit", {"answer": "3"}),
        ),
    ),
)
# Taught only when no example above fits: the shape of a step, with nothing to look up.
FALLBACK = WorkedExample(
    "What is 12 times 3?",
    (ExampleStep("12 times 3 is 36, so I submit 36", "submit", {"answer": "36"}),),
)


def teach(tools: Sequence[ToolSpec]) -> str:
    """The protocol, worked examples that fit the tools, and every tool's full description,
    taught once at the top of the prompt (so it is part of the cached prefix)."""
    lines = [
        f'Work in steps. Each step is two lines: "{THOUGHT}" and one short sentence of '
        f'reasoning, then "{ACTION}" and one JSON object that names a tool and its arguments. '
        'Then stop: the tool\'s result comes back as "Observation:". Search for one word '
        "at a time. As soon as an Observation shows the answer, call "
        f"{SUBMIT} with the exact value it shows.",
    ]
    examples = [e for e in EXAMPLES if e.fits(tools)] or [e for e in (FALLBACK,) if e.fits(tools)]
    for number, example in enumerate(examples, start=1):
        lines += ["", f"Example {number}", example.text()]
    lines += ["", "Available tools:"]
    for spec in tools:
        schema = json.dumps(spec.parameters, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"- {spec.name}: {spec.description}\n  arguments schema: {schema}")
    return "\n".join(lines)


def _action_starts(text: str) -> list[int]:
    """Where an Action may begin, most likely first: `Action:` at the start of a line, last
    one first, then anywhere else, last first (a Thought may mention "Action:", and the
    real one is the one the model wrote last). At most MAX_TRIES of them."""
    at_line = [m.end() - len(ACTION) for m in _ACTION_LINE.finditer(text)]
    lined = set(at_line)
    rest = [m.start() for m in _ACTION.finditer(text) if m.start() not in lined]
    return (at_line[::-1] + rest[::-1])[:MAX_TRIES]


def _action_at(text: str, start: int) -> dict[str, object]:
    body = text[start + len(ACTION) :].strip()
    try:
        action, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        raise ParseFailure(f"the Action is not valid JSON ({exc.msg})") from exc
    except RecursionError as exc:
        raise ParseFailure("the Action JSON is nested too deeply") from exc
    if body[end:].strip():
        raise ParseFailure("write nothing after the Action JSON object")
    if not isinstance(action, dict) or not isinstance(action.get("tool"), str):
        raise ParseFailure('the Action must be an object with a string "tool" field')
    if not isinstance(action.get("arguments", {}), dict):
        raise ParseFailure('"arguments" must be a JSON object')
    return action


def parse(text: str, turn_index: int) -> AssistantTurn:
    """The assistant turn for `text`, with its tool call; ParseFailure says what is wrong
    (with the most likely Action when none parses)."""
    starts = _action_starts(text)
    if not starts:
        raise ParseFailure(f"no '{ACTION}' line found")
    failure: ParseFailure | None = None
    for start in starts:
        try:
            action = _action_at(text, start)
        except ParseFailure as exc:
            failure = failure or exc
            continue
        arguments = action.get("arguments", {})
        raw_args = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        thought = text[:start].strip().removeprefix(THOUGHT).strip()
        call = ToolCall(call_id(turn_index), str(action["tool"]), raw_args)
        return AssistantTurn(text=text, reasoning=thought, tool_calls=(call,))
    assert failure is not None
    raise failure


def correction(problem: str) -> str:
    """The user turn that follows an unparseable assistant turn."""
    return (
        f"Your last message could not be parsed: {problem}. Reply with one "
        f'"{THOUGHT}" line and one "{ACTION}" line holding a single JSON object.'
    )


def observation(result: ToolResult) -> str:
    """How a tool result reads in the text protocol."""
    label = "Observation (error)" if result.is_error else "Observation"
    return f"{label}: {result.content}"


def piece(message: Message, *, opening: bool = False) -> tuple[Role, str]:
    """One transcript message as a (role, text) pair. The opening system text keeps the
    system role; notices, summaries and later system text are user text, in place."""
    if isinstance(message, SystemText) and opening:
        return "system", message.text
    if isinstance(message, UserText):
        return "user", message.text
    if isinstance(message, AssistantTurn):
        return "assistant", message.text
    if isinstance(message, ToolResult):
        return "user", observation(message)
    if isinstance(message, Notice | Summary | SystemText):
        return "user", inline_text(message)
    raise TypeError(f"unknown message kind: {message!r}")


def turns(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[tuple[Role, str]]:
    """The visible messages as alternating chat turns for a text-protocol model.

    The opening system text carries the protocol and the tools; consecutive same-role
    pieces (tool results and notices of one step) merge into one turn, joined by a blank
    line. Merging only ever joins pieces of one step, so earlier turns never change (I1).
    """
    out: list[tuple[Role, str]] = []
    taught = False
    for index, message in enumerate(messages):
        role, text = piece(message, opening=index == 0)
        if role == "system" and not taught:
            text = f"{text}\n\n{teach(tools)}"
            taught = True
        if out and out[-1][0] == role and role != "assistant":
            out[-1] = (role, f"{out[-1][1]}\n\n{text}")
        else:
            out.append((role, text))
    return out
