"""A GBNF grammar that makes a local model's every step a parseable text-protocol step.

The grammar forces exactly

    Thought: <one short line>
    Action: {"tool": "<one of the tool names>", "arguments": <object valid for that tool>}

so `react_text.parse` always succeeds on a finished step. Each tool's argument object
comes from llama.cpp's own JSON-schema-to-GBNF converter, with its string characters
tightened to what strict JSON allows; a tool's grammar-only schema
(`ToolSpec.grammar_parameters`, e.g. an enum of existing paths) narrows it further
without changing the prompt.

Every string the grammar allows is bounded, so a step always closes: a model that
degenerates into repeating words inside a string (issue 37) reaches the bound and must
close the string, the call and the step, instead of running out of output tokens with the
JSON still open (three such turns end a run). See `string_bound`.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeAlias

from warmloop.errors import ConfigurationError
from warmloop.messages import JsonObject
from warmloop.protocols.fresh import Spent
from warmloop.protocols.react_text import ACTION, THOUGHT
from warmloop.tools.gateway import GATEWAY
from warmloop.tools.schema import ToolSpec

MAX_THOUGHT_CHARS = 160

MAX_PATTERN_CHARS = 200
"""A search pattern's bound in the grammar. The workspace refuses patterns over
`workspace.pattern.MAX_PATTERN_CHARS` (1,000); a pattern a model means is a name or a
short regex, and one past 200 characters is the loop of issue 37
(`parse_value.*named group.*regular expression.*named group...`)."""
MAX_PATH_CHARS = 255
"""A path's bound in the grammar: NAME_MAX, one file name's bytes on Linux; the workspace
refuses names of `workspace.confined.MAX_PATH_BYTES` (4,096, PATH_MAX) or more, and a path
in a workspace that reaches either is not written out by a small model."""
MAX_STRING_CHARS = 400
"""Any other string's bound (an answer, a key, a reason, a string nested in a list): with
a 160-character thought it still fits `LocalModel`'s default output budget of 256 tokens
at the usual three or more characters a token."""
MAX_NAME_CHARS = 120
"""A name's bound in the grammar (find_definition's `name`): a dotted module path and a
qualified name fit; the workspace refuses names over 200 characters."""
ARGUMENT_CHARS = {"pattern": MAX_PATTERN_CHARS, "path": MAX_PATH_CHARS, "name": MAX_NAME_CHARS}
MAX_ITEMS = 32
"""A list's bound in the grammar where its schema sets none (or a higher `maxItems`): a
list a model writes in one step; one that repeats an item past 32 is the same loop."""

# llama.cpp's converter lets raw control characters into JSON strings; strict JSON (and so
# `react_text.parse`) rejects them, so a string character here excludes U+0000-U+001F.
STRICT_CHAR = (
    r'[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
)

# The thought is one line with no colon: a colon-free thought can never contain "Action:",
# which `react_text.parse` looks for first, so the real Action is always the one found.
THOUGHT_CHAR = r"[^\x00-\x1F:]"
RULE_CHARS = re.compile(r"[^a-zA-Z0-9-]+")
"""What llama.cpp's converter replaces with "-" in rule names."""


def literal(text: str) -> str:
    """A GBNF string literal for `text` (JSON escaping is a valid GBNF escaping)."""
    return json.dumps(text, ensure_ascii=False)


def grammar_schema(spec: ToolSpec) -> JsonObject:
    """The argument schema a tool's grammar follows: its grammar-only schema when it has
    one, else the schema the model is shown."""
    return dict(spec.grammar_parameters or spec.parameters)


def tools_key(tools: Sequence[ToolSpec]) -> str:
    """A deterministic key for a tool set's grammar: names and argument schemas, in order."""
    return json.dumps(
        [[t.name, grammar_schema(t)] for t in tools], ensure_ascii=False, separators=(",", ":")
    )


class _SchemaConverter(Protocol):
    """What the grammar uses of llama.cpp's JSON-schema-to-GBNF converter (untyped): it
    turns schemas into rules it keeps by name, and writes them all out."""

    _rules: dict[str, str]

    def resolve_refs(self, schema: JsonObject, url: str) -> JsonObject: ...

    def visit(self, schema: JsonObject, name: str) -> str: ...

    def format_grammar(self) -> str: ...


def _converter() -> _SchemaConverter:
    try:
        grammars = importlib.import_module("llama_cpp.llama_grammar")
    except ImportError as exc:
        raise ConfigurationError(
            "the grammar for local models needs llama-cpp-python; "
            "install it with: pip install 'warmloop[local]'"
        ) from exc
    converter: _SchemaConverter = grammars.SchemaConverter(
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    return converter


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


SHORT_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "\b": "b",
    "\f": "f",
    "\n": "n",
    "\r": "r",
    "\t": "t",
}
"""Characters JSON can write as a backslash and one letter, and that letter."""


def spellings(char: str) -> list[str]:
    """How a JSON string inside the grammar may write `char` before it leaves every
    value's trie: as itself where JSON allows it, and as its short escape if it has one
    (`/` has both). A `\\u` escape is not offered there, so no value is spelled around."""
    found = [char] if char not in '"\\' and ord(char) >= 0x20 else []
    if char in SHORT_ESCAPES:
        found.append("\\" + SHORT_ESCAPES[char])
    return found


def string_bound(argument: str, schema: object) -> int | None:
    """How many characters the grammar lets a top-level string `argument` hold: its
    `ARGUMENT_CHARS` (else `MAX_STRING_CHARS`), lowered to the schema's own `maxLength`;
    None when the schema is not a free string (an enum, a const, a pattern or a format
    bound it already, or it is no string)."""
    if not isinstance(schema, dict) or schema.get("type") != "string":
        return None
    if any(key in schema for key in ("enum", "const", "pattern", "format")):
        return None
    bound = ARGUMENT_CHARS.get(argument, MAX_STRING_CHARS)
    own = schema.get("maxLength")
    return min(bound, own) if isinstance(own, int) and own >= 0 else bound


def string_bounds(spec: ToolSpec) -> dict[str, tuple[int, int]]:
    """Per top-level free string argument of `spec`'s grammar schema, its `string_bound`
    and its `minLength` (0 if none)."""
    properties = grammar_schema(spec).get("properties")
    if not isinstance(properties, dict):
        return {}
    bounds: dict[str, tuple[int, int]] = {}
    for argument, schema in properties.items():
        bound = string_bound(str(argument), schema)
        if bound is not None and isinstance(schema, dict):  # a bound is a string schema's
            shortest = schema.get("minLength", 0)
            bounds[str(argument)] = (bound, shortest if isinstance(shortest, int) else 0)
    return bounds


def bound_lists(schema: object) -> None:
    """Give every list in `schema` (in place, nested ones too) at most `MAX_ITEMS` items,
    or its own `maxItems` if lower (never fewer than its `minItems`)."""
    if isinstance(schema, list):
        for item in schema:
            bound_lists(item)
        return
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "array":
        own, least = schema.get("maxItems"), schema.get("minItems", 0)
        bound = min(own, MAX_ITEMS) if isinstance(own, int) else MAX_ITEMS
        schema["maxItems"] = max(bound, least if isinstance(least, int) else 0)
    for value in schema.values():
        bound_lists(value)


def bounded_string(name: str, bound: int, shortest: int = 0) -> str:
    """The GBNF rule `name` for a JSON string of `shortest` to `bound` characters."""
    low = min(shortest, bound)
    return f'{name} ::= "\\"" char{{{low},{bound}}} "\\"" space'


def unlike(values: Sequence[str], name: str, bound: int = MAX_STRING_CHARS) -> list[str]:
    """GBNF rules `name` for a JSON string (quotes included) of at most `bound` characters
    whose value starts with none of `values`, walking a trie of the values' characters: at
    each node the string may end, take a character no value continues with (plainly or as
    a short escape) and then anything up to the bound, or spell a continuing character (in
    any of its `spellings`) unless that completes a value. It holds for every value,
    whatever JSON escapes."""
    plain = sorted({v for v in values if v})
    rules: list[str] = []

    def node(prefix: str, number: list[int]) -> str:
        rule = f"{name}-{number[0]}"
        number[0] += 1
        here = [v for v in plain if v.startswith(prefix)]
        following = sorted({v[len(prefix)] for v in here if len(v) > len(prefix)})
        excluded = "".join(f"\\U{ord(c):08X}" for c in following)
        other = r'[^"\\\x00-\x1F' + excluded + "]"
        letters = "".join(letter for char, letter in SHORT_ESCAPES.items() if char not in following)
        first = f'{other} | "\\\\" [{re.escape(letters)}]' if letters else other
        depth = len(prefix)
        if depth >= bound:
            rules.append(f"{rule} ::= " + r'"\"" space')
            return rule
        rest = f"char{{0,{bound - depth - 1}}}"
        options = [r'"\"" space', f"( {first} ) {rest} " + r'"\"" space']
        for char in following:
            if prefix + char in plain:
                continue
            spelled = [literal(s) for s in spellings(char)]
            if spelled:
                options.append(f"( {' | '.join(spelled)} ) {node(prefix + char, number)}")
        rules.append(f"{rule} ::= " + " | ".join(f"( {o} )" for o in options))
        return rule

    first = node("", [0])
    rules.append(f"{name} ::= " + r'"\"" ' + first)
    return rules


_Narrowed: TypeAlias = tuple[JsonObject, dict[str, list[str]]]
"""A tool's grammar schema without its spent values, and per free-string argument the
values it must avoid."""


def narrowed(spec: ToolSpec, spent: Spent) -> _Narrowed | None:
    """The grammar schema of `spec` without spent values, and the free-string properties
    that must avoid some values; None when nothing is left to ask of the tool."""
    schema = copy.deepcopy(grammar_schema(spec))
    avoid: dict[str, list[str]] = {}
    for tool, argument, values in spent.values:
        properties = schema.get("properties")
        if tool != spec.name or not isinstance(properties, dict) or argument not in properties:
            continue
        prop = properties[argument]
        enum = prop.get("enum") if isinstance(prop, dict) else None
        if isinstance(prop, dict) and isinstance(enum, list):
            left = [v for v in enum if v not in values]
            if not left:
                return None
            properties[argument] = {**prop, "enum": left}
        else:
            avoid[argument] = list(values)
            properties[argument] = {"enum": [AVOID_SENTINEL]}
    return schema, avoid


AVOID_SENTINEL = "\u0000avoid"


def action_grammar(
    tools: Sequence[ToolSpec],
    *,
    spent: Spent | None = None,
    max_thought_chars: int = MAX_THOUGHT_CHARS,
) -> str:
    """The GBNF text of one step for `tools`, never offering a `spent` call (see
    `fresh.spent`); deterministic: same tools and spent calls, same grammar."""
    if not tools:
        raise ConfigurationError("a step grammar needs at least one tool; give the agent tools")
    if max_thought_chars < 1:
        raise ConfigurationError("max_thought_chars must be at least 1")
    choices = _choices(tools, spent or Spent())
    converter = _converter()
    alternatives = []
    extra: list[str] = []
    for index, (spec, (schema, avoid)) in enumerate(choices):
        alternative, rules = _alternative(converter, index, spec, schema, avoid)
        alternatives.append(alternative)
        extra += rules
    return _grammar_text(converter, alternatives, extra, max_thought_chars)


def _choices(tools: Sequence[ToolSpec], spent: Spent) -> list[tuple[ToolSpec, _Narrowed]]:
    """The tools a step may call, each with its grammar schema `narrowed` by what is
    spent: the tools with something left to ask, or all of them as they are when none
    has."""
    offered = [t for t in tools if t.name not in spent.tools]
    shaped = [(t, narrowed(t, spent)) for t in offered or tools]
    return [(t, n) for t, n in shaped if n is not None] or [
        (t, (copy.deepcopy(grammar_schema(t)), {})) for t in tools
    ]


def _alternative(
    converter: _SchemaConverter,
    index: int,
    spec: ToolSpec,
    schema: JsonObject,
    avoid: Mapping[str, list[str]],
) -> tuple[str, list[str]]:
    """One tool's alternative of the `action` rule (its name, then its arguments' rule,
    which the converter keeps), and the rules of its bounded and avoiding strings."""
    prefix = f"{spec.name}-arguments"
    bounds = string_bounds(spec)
    properties = schema.get("properties")
    for argument in bounds:
        if isinstance(properties, dict) and argument in properties:
            # A sentinel enum gives the argument its own rule, bounded below.
            properties[argument] = {"enum": [AVOID_SENTINEL]}
    bound_lists(schema)
    try:
        # resolve_refs rewrites `$ref`s in place, and each tool's refs must stay its own.
        schema = converter.resolve_refs(schema, f"tool-{index}")
        rule = converter.visit(schema, prefix)
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"tool {spec.name!r}: its argument schema cannot be turned into a grammar "
            f"({exc}); simplify the argument types (plain JSON types, lists, models)"
        ) from exc
    extra: list[str] = []
    for argument in sorted({*bounds, *avoid}):
        # The sentinel enum gave the argument its own rule: a bounded string, one that
        # is also "none of these" where values are spent.
        name = RULE_CHARS.sub("-", f"{prefix}-{argument}")
        if converter._rules.pop(name, None) is None:
            continue
        bound, shortest = bounds.get(argument, (MAX_STRING_CHARS, 0))
        if argument in avoid:
            extra += unlike(avoid[argument], name, bound)
        else:
            extra.append(bounded_string(name, bound, shortest))
    head = literal(f"{literal(spec.name)}, {literal('arguments')}: ")
    return f"{head} {rule}", extra


def _grammar_text(
    converter: _SchemaConverter,
    alternatives: Sequence[str],
    extra: Sequence[str],
    max_thought_chars: int,
) -> str:
    """The whole grammar: the step (a thought, then one of the `alternatives`), the string
    rules of `extra`, and the converter's rules with their strings kept strict JSON and
    bounded."""
    rules: dict[str, str] = converter._rules
    rules["char"] = STRICT_CHAR
    if "string" in rules:  # a string nested in a list or object, or a free object's key
        rules["string"] = bounded_string("string", MAX_STRING_CHARS).split(" ::= ", 1)[1]
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
    return "\n".join([*head_rules, *extra, converter.format_grammar()]) + "\n"
