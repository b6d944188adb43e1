"""The stable tools a large toolbox puts in the tool block: `search_tools`, `call_tool`
and, in code mode, `run_code`, and what the first two answer. Their descriptions never
mention the catalog's contents, so the tool block stays byte-identical however many tools
are found, connected or announced.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from typing import Annotated

from pydantic import BaseModel, Field

from warmloop.messages import ToolResult
from warmloop.tools.announce import untagged
from warmloop.tools.schema import (
    FieldSpec,
    ToolSpec,
    describe_arguments,
    model_schema,
    typed_model,
)
from warmloop.transcript import Transcript

SEARCH = "search_tools"
GATEWAY = "call_tool"
"""The stable tool through which discovered tools are called."""
SUBMIT = "submit"
"""The tool that ends a run with its declared outputs (built in `warmloop.outputs`); no
toolbox may name a tool so."""
RUN_CODE = "run_code"
RESERVED = frozenset({SEARCH, GATEWAY, RUN_CODE})
_LISTED = re.compile(r"^- ([^(\s]+)\(", re.MULTILINE)
MAX_LIMIT = 20
DEFAULT_LIMIT = 3
"""Matches a search lists unless asked (the provider's own tool search loads 3-5: Anthropic,
Tool search tool); only the best one is announced in full."""


def _spec(
    name: str, description: str, fields: dict[str, FieldSpec], texts: dict[str, str]
) -> tuple[ToolSpec, type[BaseModel]]:
    model = typed_model(f"{name}_args", fields, f"tool {name!r}")
    parameters = model_schema(model, f"tool {name!r}")
    describe_arguments(parameters, texts)
    return ToolSpec(name, description, parameters), model


SEARCH_SPEC, SEARCH_ARGS = _spec(
    SEARCH,
    "Search the catalog of tools not listed here. Returns the best matches as "
    f"name(arguments), best first, each callable with {GATEWAY}; the best one, found for "
    "the first time, is described in full right after this step. Search a tool's exact "
    "name to have it described.",
    {"query": (str, ...), "limit": (Annotated[int, Field(ge=1, le=MAX_LIMIT)], DEFAULT_LIMIT)},
    {
        "query": "What you need, in a few words, e.g. 'create calendar event'.",
        "limit": f"How many matches to return (1 to {MAX_LIMIT}).",
    },
)

GATEWAY_SPEC, GATEWAY_ARGS = _spec(
    GATEWAY,
    f"Call a tool found with {SEARCH}, by its name, with its arguments.",
    {"name": (str, ...), "arguments": (dict[str, object], Field(default_factory=dict))},
    {
        "name": "The tool's name, as the search found it.",
        "arguments": "The tool's arguments as a JSON object, as its description says.",
    },
)

CODE_SPEC, CODE_ARGS = _spec(
    RUN_CODE,
    "Run a Python snippet in a sandbox (a subset of Python: no imports beyond a few "
    "standard modules, no files or network unless granted) and return what it prints and "
    "the value of its last expression. Every tool you can call is a Python function of the "
    "same name taking its arguments as keyword arguments: those listed here, and tools found "
    "later once they are announced. Use it to call several tools in one step and keep only "
    "what you need of their results.",
    {"code": (str, ...)},
    {"code": "The Python code to run."},
)


def search_answer(query: str, matches: Sequence[ToolSpec], discovered: Container[str]) -> str:
    """What `search_tools` answers: each match compactly, best first. Only the best one is
    taught in full (after the step, when not yet `discovered`); every match can be called."""
    lines = [f"- {untagged(spec.compact())}" for spec in matches]
    new = matches[0].name not in discovered
    if new:
        lines[0] += " (new: described in full after this step)"
    head = f"{len(matches)} {'match' if len(matches) == 1 else 'matches'} for {query!r}"
    tail = f"Call {'it' if len(matches) == 1 else 'any of them'} with {GATEWAY}."
    if len(matches) > 1:
        tail += f" To read another's full description, {SEARCH} for its exact name."
    return "\n".join([f"{head}:", *lines, tail])


def listed_in(transcript: Transcript, start: int = 0) -> set[str]:
    """Names of the tools listed by the `search_tools` answers a model is shown, from message
    `start` on: each can be called through the gateway, described in full or not."""
    names: set[str] = set()
    for _, message in transcript.visible(start):
        if isinstance(message, ToolResult) and message.name == SEARCH and not message.is_error:
            names.update(m.group(1) for m in _LISTED.finditer(message.content))
    return names


def not_listed(name: str, discovered: bool) -> str:
    """Why a catalog tool called by its own name (or not yet found) was refused."""
    if discovered:
        return f"{name} is not in the tool list: call it with {GATEWAY}(name={name!r}, ...)."
    return (
        f"{name} has not been discovered yet: find it with {SEARCH} first (it is then "
        f"described in full), and call it with {GATEWAY}."
    )
