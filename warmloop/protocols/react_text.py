"""The text protocol for models without native tool calling: Thought / Action / Observation.

A step is written as

    Thought: <free text>
    Action: {"tool": "<name>", "arguments": {...}}

and the tool's answer comes back as a user turn starting with `Observation:`. The model's raw
text is kept byte-for-byte as the assistant turn; parsing only derives the tool call from it.
"""

from __future__ import annotations

import json
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


def parse(text: str, turn_index: int) -> AssistantTurn:
    """The assistant turn for `text`, with its tool call; ParseFailure says what is wrong."""
    start = text.find(ACTION)
    if start < 0:
        raise ParseFailure(f"no '{ACTION}' line found")
    body = text[start + len(ACTION) :].strip()
    try:
        action, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        raise ParseFailure(f"the Action is not valid JSON ({exc.msg})") from exc
    if body[end:].strip():
        raise ParseFailure("write nothing after the Action JSON object")
    if not isinstance(action, dict) or not isinstance(action.get("tool"), str):
        raise ParseFailure('the Action must be an object with a string "tool" field')
    arguments = action.get("arguments", {})
    if not isinstance(arguments, dict):
        raise ParseFailure('"arguments" must be a JSON object')
    raw_args = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    thought = text[:start].strip().removeprefix(THOUGHT).strip()
    call = ToolCall(call_id(turn_index), action["tool"], raw_args)
    return AssistantTurn(text=text, reasoning=thought, tool_calls=(call,))


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
