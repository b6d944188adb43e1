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
from collections.abc import Sequence
from typing import Literal

from warmloop.protocols.inline import inline_text
from warmloop.tools import ToolSpec
from warmloop.transcript import (
    AssistantTurn,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)

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


def teach(tools: Sequence[ToolSpec]) -> str:
    """The protocol and every tool's full description, taught once at the top of the prompt."""
    lines = [
        "Work in steps. In each step write exactly:",
        f"{THOUGHT} <your reasoning>",
        f'{ACTION} {{"tool": "<tool name>", "arguments": {{<arguments as JSON>}}}}',
        "Then stop and wait for the Observation. Available tools:",
    ]
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
