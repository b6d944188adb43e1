"""A GBNF grammar that makes a local model's every step a parseable text-protocol step.

The grammar forces exactly

    Thought: <one short line>
    Action: {"tool": "<one of the tool names>", "arguments": <object valid for that tool>}

so `react_text.parse` always succeeds on a finished step. Each tool's argument object
comes from llama.cpp's own JSON-schema-to-GBNF converter, with its string characters
tightened to what strict JSON allows.
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Sequence
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.protocols.react_text import ACTION, THOUGHT
from warmloop.tools import ToolSpec

MAX_THOUGHT_CHARS = 160

# llama.cpp's converter lets raw control characters into JSON strings; strict JSON (and so
# `react_text.parse`) rejects them, so a string character here excludes U+0000-U+001F.
STRICT_CHAR = (
    r'[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
)

# The thought is one line with no colon: a colon-free thought can never contain "Action:",
# which `react_text.parse` looks for first, so the real Action is always the one found.
THOUGHT_CHAR = r"[^\x00-\x1F:]"


def literal(text: str) -> str:
    """A GBNF string literal for `text` (JSON escaping is a valid GBNF escaping)."""
    return json.dumps(text, ensure_ascii=False)


def tools_key(tools: Sequence[ToolSpec]) -> str:
    """A deterministic key for a tool set's grammar: names and argument schemas, in order."""
    return json.dumps(
        [[t.name, t.parameters] for t in tools], ensure_ascii=False, separators=(",", ":")
    )


def _converter() -> Any:
    try:
        grammars = importlib.import_module("llama_cpp.llama_grammar")
    except ImportError as exc:
        raise ConfigurationError(
            "the grammar for local models needs llama-cpp-python; "
            "install it with: pip install 'warmloop[local]'"
        ) from exc
    converter: Any = grammars.SchemaConverter(
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    return converter


GATEWAY = "call_tool"
"""The stable tool through which discovered tools are called (`warmloop.toolbox`)."""


def gateway_alternatives(
    tools: Sequence[ToolSpec], announced: Sequence[ToolSpec]
) -> tuple[ToolSpec, ...]:
    """`tools` with the gateway narrowed to the announced tools: one alternative per tool,
    `{"name": "<its name>", "arguments": <object valid for it>}`, so a discovered tool is
    called as exactly as a listed one. Before anything is announced the gateway is left out
    (any call through it could only fail), unless it is the only tool."""
    if not any(t.name == GATEWAY for t in tools):
        return tuple(tools)
    if not announced:
        others = tuple(t for t in tools if t.name != GATEWAY)
        return others or tuple(tools)
    narrowed = [
        ToolSpec(
            GATEWAY,
            "",
            {
                "type": "object",
                "properties": {"name": {"const": a.name}, "arguments": a.parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
        )
        for a in announced
    ]
    return tuple(t for t in tools if t.name != GATEWAY) + tuple(narrowed)


def action_grammar(tools: Sequence[ToolSpec], *, max_thought_chars: int = MAX_THOUGHT_CHARS) -> str:
    """The GBNF text of one step for `tools` (deterministic: same tools, same grammar)."""
    if not tools:
        raise ConfigurationError("a step grammar needs at least one tool; give the agent tools")
    if max_thought_chars < 1:
        raise ConfigurationError("max_thought_chars must be at least 1")
    converter = _converter()
    alternatives = []
    for index, spec in enumerate(tools):
        # resolve_refs rewrites `$ref`s in place, and each tool's refs must stay its own.
        schema = copy.deepcopy(spec.parameters)
        try:
            schema = converter.resolve_refs(schema, f"tool-{index}")
            rule = converter.visit(schema, f"{spec.name}-arguments")
        except (AssertionError, KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"tool {spec.name!r}: its argument schema cannot be turned into a grammar "
                f"({exc}); simplify the argument types (plain JSON types, lists, models)"
            ) from exc
        head = literal(f"{literal(spec.name)}, {literal('arguments')}: ")
        alternatives.append(f"{head} {rule}")
    rules: dict[str, str] = converter._rules
    if "char" in rules:
        rules["char"] = STRICT_CHAR
    root = " ".join(
        [
            literal(f"{THOUGHT} "),
            "thought",
            literal(f"\n{ACTION} {{{literal('tool')}: "),
            "action",
            literal("}"),
        ]
    )
    head_rules = [
        f"root ::= {root}",
        f"thought ::= {THOUGHT_CHAR}{{1,{max_thought_chars}}}",
        "action ::= " + " | ".join(f"( {alt} )" for alt in alternatives),
    ]
    return "\n".join([*head_rules, converter.format_grammar()]) + "\n"
