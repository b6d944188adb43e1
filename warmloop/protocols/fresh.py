"""Which calls can still teach a model something: the grammar never offers a spent one.

A small model left to itself repeats its last call until its budget runs out. A call that
does not page (no line range) spends its main value: after `search {"pattern": "x"}`, in
any folder, no search for "x" is offered again, nor for any pattern starting with "x" (its
matches are a subset); after `read_file {"path": "a.py"}` no read of a.py but by line
range; after a bare `list_files {}` no listing at all. And before the first observation
of a run, `submit` is not offered when there are other tools: an answer must rest on
something looked up; nor right after a submit answered with an error (an output check
refused it): the model looks again, as the refusal asks, before it answers again, and
the refused answer is spent until a later call asks for that very value (a search for
it, which can show it is there). This only narrows constrained
decoding; the prompt is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from warmloop.messages import AssistantTurn, Message, ToolResult
from warmloop.tools.gateway import SUBMIT
from warmloop.tools.schema import ToolSpec


@dataclass(frozen=True)
class Spent:
    """What the next step may no longer do: tools with nothing left to tell, and per
    tool, main-argument values already asked for in full."""

    tools: frozenset[str] = frozenset()
    values: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    """(tool, main argument, spent values), sorted, for a deterministic grammar key."""

    def key(self) -> str:
        """A deterministic text key (for caching the grammar)."""
        return json.dumps([sorted(self.tools), self.values], separators=(",", ":"))


NOTHING_SPENT = Spent()


def main_argument(spec: ToolSpec) -> str | None:
    """The argument a call varies on: the first required string property, else the first
    property when it is an optional string."""
    properties = spec.parameters.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    required = spec.parameters.get("required", [])
    names = [n for n in properties if isinstance(required, list) and n in required]
    for name in [*names, next(iter(properties))]:
        schema = properties[name]
        if isinstance(schema, dict) and schema.get("type") == "string":
            return str(name)
    return None


def _broadest(spec: ToolSpec, arguments: Mapping[str, object]) -> dict[str, object]:
    """The call's arguments without those at their schema default."""
    properties = spec.parameters.get("properties")
    defaults = properties if isinstance(properties, dict) else {}
    return {
        name: value
        for name, value in arguments.items()
        if not (isinstance(defaults.get(name), dict) and defaults[name].get("default") == value)
    }


def _ranged(arguments: Mapping[str, object]) -> bool:
    """Whether a call pages through its target (a numeric argument such as a line range):
    the next page is new, so such a call spends nothing."""
    return any(isinstance(v, int | float) and not isinstance(v, bool) for v in arguments.values())


def spent(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Spent:
    """Pure: what the calls in `messages` have used up, for the next step of `tools`."""
    specs = {spec.name: spec for spec in tools}
    gone: set[str] = set()
    values: dict[tuple[str, str], set[str]] = {}
    observed = refused = False
    failed = {m.call_id for m in messages if isinstance(m, ToolResult) and m.is_error}
    answers: set[str] = set()
    for message in messages:
        if isinstance(message, ToolResult):
            observed = observed or message.name != SUBMIT
            refused = message.name == SUBMIT and message.is_error
        if not isinstance(message, AssistantTurn):
            continue
        for call in message.tool_calls:
            spec = specs.get(call.name)
            if spec is None or (call.name == SUBMIT and call.id not in failed):
                continue
            try:
                arguments = json.loads(call.arguments or "{}")
            except json.JSONDecodeError:
                continue
            if not isinstance(arguments, dict):
                continue
            left = _broadest(spec, arguments)
            main = main_argument(spec)
            asked = left.get(main) if main is not None else None
            if call.name == SUBMIT:  # a refused answer: not offered again, unless looked up
                if isinstance(asked, str):
                    answers.add(asked)
                continue
            if isinstance(asked, str):
                answers.discard(asked)
            if not left and not spec.parameters.get("required"):
                gone.add(call.name)
            elif main is not None and isinstance(asked, str) and not _ranged(left):
                values.setdefault((call.name, main), set()).add(asked)
    submit = main_argument(specs[SUBMIT]) if SUBMIT in specs else None
    if answers and submit is not None:
        values[(SUBMIT, submit)] = answers
    others = [spec.name for spec in tools if spec.name != SUBMIT and spec.name not in gone]
    if (refused or not observed) and others and SUBMIT in specs:
        gone.add(SUBMIT)
    listed = tuple(sorted((tool, arg, tuple(sorted(v))) for (tool, arg), v in values.items()))
    return Spent(frozenset(gone), listed)
