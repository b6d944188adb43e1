"""What a model is told about a tool, built from a typed function and its docstring.

The docstring is parsed (Google, NumPy, Sphinx and Epydoc styles): its summary becomes the
tool's description and each documented argument becomes that parameter's `description`, so
the Args/Returns/Raises blocks never reach the wire and the tool block stays lean.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import docstring_parser
from pydantic import BaseModel, ConfigDict, PydanticUserError, create_model
from pydantic.errors import PydanticInvalidForJsonSchema, PydanticSchemaGenerationError

from warmloop.errors import ConfigurationError
from warmloop.messages import JsonData, JsonObject, JsonValue
from warmloop.tools.context import context_parameter

_SCHEMA_ERRORS = (
    PydanticSchemaGenerationError,
    PydanticInvalidForJsonSchema,
    PydanticUserError,
    TypeError,
    NameError,
)
RESERVED_FIELD_NAMES = frozenset({"model_config"})
"""Names pydantic takes for itself: a field of that name silently disappears."""
FieldSpec: TypeAlias = tuple[object, object]
"""One field of a model `typed_model` builds: its annotation (a type, or a typing form such
as `Annotated[int, Field(ge=1)]`) and its default (`...`: required), as pydantic takes them."""


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told about a tool: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, JsonValue]
    defer_loading: bool = False
    """Provider-native tool search: the provider keeps this tool out of the prompt until its
    own search finds it (Anthropic and OpenAI Responses; see `warmloop.tools`)."""
    grammar_parameters: dict[str, JsonValue] | None = None
    """A stricter argument schema for constrained decoding only (e.g. an enum of the paths
    that exist); never rendered to a model, so it can narrow a local model's choices
    without changing any prompt. None: the grammar follows `parameters`."""

    def full(self) -> dict[str, JsonValue]:
        """The full rendering, shown the first time a model sees the tool."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def compact(self) -> str:
        """The compact rendering: name, argument names and types (`?` marks optional)."""
        props: Mapping[str, JsonData] = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", []))
        args = [
            f"{name}{'' if name in required else '?'}: {schema_type(schema)}"
            for name, schema in props.items()
        ]
        return f"{self.name}({', '.join(args)})"


def schema_type(schema: JsonData) -> str:
    """A short type name for a JSON schema fragment (`string`, `array[integer]`, `a | b`);
    the boolean schemas `true` and `false` (anything, nothing) are `any` and `never`, and
    what is no schema at all says nothing (`any`)."""
    if isinstance(schema, bool):
        return "any" if schema else "never"
    if not isinstance(schema, dict):
        return "any"
    alternatives, values = schema.get("anyOf"), schema.get("enum")
    if isinstance(alternatives, list):
        return " | ".join(schema_type(s) for s in alternatives)
    if isinstance(values, list):
        return " | ".join(json.dumps(v) for v in values)
    kind = schema.get("type", "any")
    if kind == "array" and "items" in schema:
        return f"array[{schema_type(schema['items'])}]"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return str(kind)


_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs")


def clean_schema(schema: JsonObject) -> JsonObject:
    """Drop pydantic's generated titles everywhere: bytes on the wire that carry no meaning.

    Only schema nodes lose their `title`; a property that is *named* `title` stays.
    """
    schema.pop("title", None)
    subschemas: list[JsonData] = []
    for key in _SUBSCHEMA_MAPS:
        named = schema.get(key)
        subschemas += named.values() if isinstance(named, dict) else []
    for key in _SUBSCHEMA_LISTS:
        listed = schema.get(key)
        subschemas += listed if isinstance(listed, list) else []
    subschemas += [schema.get("items"), schema.get("additionalProperties")]
    for sub in subschemas:
        if isinstance(sub, dict):
            clean_schema(sub)
    return schema


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (short and long description, no sections) and each argument's text."""
    try:
        # The leading newline lets the Google parser see a section on the first line.
        parsed = docstring_parser.parse("\n" + doc)
    except docstring_parser.ParseError:
        return doc.strip(), {}  # an unusual layout: keep all of it rather than guess
    parts = [p.strip() for p in (parsed.short_description, parsed.long_description) if p]
    joint = "\n\n" if parsed.blank_after_short_description else "\n"
    arguments = {
        p.arg_name: p.description.strip()
        for p in parsed.params
        if p.description and p.description.strip()
    }
    return joint.join(p for p in parts if p), arguments


def describe_arguments(parameters: JsonObject, texts: Mapping[str, str]) -> None:
    """Give each documented argument its text, unless its annotation already has one."""
    props = parameters.get("properties")
    if not isinstance(props, dict):
        return  # no arguments to describe
    for name, prop in list(props.items()):
        text = texts.get(name)
        if text and isinstance(prop, dict) and "description" not in prop:
            props[name] = {"description": text, **prop}


def check_field_name(name: object, what: str) -> str:
    """A field name pydantic keeps as given; else a ConfigurationError naming it."""
    if not isinstance(name, str) or not name:
        raise ConfigurationError(f"{what}: field names must be non-empty strings, got {name!r}")
    if name.startswith("_") or name in RESERVED_FIELD_NAMES:
        raise ConfigurationError(
            f"{what}: {name!r} cannot be used as a name here: pydantic treats names that start "
            "with '_' as private and reserves 'model_config', so it would silently vanish; "
            "rename it"
        )
    return name


def typed_model(model_name: str, fields: Mapping[str, FieldSpec], what: str) -> type[BaseModel]:
    """A strict (extra="forbid") pydantic model of `fields`, or a ConfigurationError."""
    for name in fields:
        check_field_name(name, what)
    try:
        model: type[BaseModel] = create_model(  # type: ignore[call-overload]
            model_name, __config__=ConfigDict(extra="forbid"), **fields
        )
        model.model_json_schema()  # forward references only fail here
    except _SCHEMA_ERRORS as exc:
        raise ConfigurationError(f"{what}: {field_problem(fields, exc)}") from exc
    lost = set(fields) - set(model.model_fields)
    if lost:
        raise ConfigurationError(f"{what}: pydantic dropped the fields {sorted(lost)}; rename them")
    return model


def field_problem(fields: Mapping[str, FieldSpec], exc: Exception) -> str:
    """Which field's type could not be understood, for the error message."""
    for name, (kind, _) in fields.items():
        # pydantic types a field's annotation as TypeForm[Any], which `kind` is not known to be
        probe: dict[str, Any] = {"probe": (kind, ...)}
        try:
            create_model("Probe", **probe).model_json_schema()
        except Exception:
            return f"the type of {name!r} ({kind!r}) is not a type pydantic can validate"
    return f"cannot build a schema ({type(exc).__name__}: {exc})"


def model_schema(model: type[BaseModel], what: str) -> JsonObject:
    """The model's cleaned JSON schema, or a ConfigurationError naming the model."""
    try:
        return clean_schema(model.model_json_schema())
    except _SCHEMA_ERRORS as exc:
        raise ConfigurationError(
            f"{what}: cannot build a JSON schema for {model.__name__} ({exc}); use types "
            "pydantic can describe (str, int, lists, pydantic models, ...)"
        ) from exc


def argument_hints(function: Callable[..., object], tool_name: str) -> dict[str, object]:
    """Resolved annotations of the arguments only: a return type that names a local class
    (unresolvable under `from __future__ import annotations`) must not break the tool."""
    hints: dict[str, object] = {}
    namespace = getattr(function, "__globals__", {})
    for name, annotation in inspect.get_annotations(function).items():
        if name == "return":
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # what typing.get_type_hints does
            except NameError as exc:
                raise ConfigurationError(
                    f"tool {tool_name!r}: cannot resolve the type of {name!r} ({exc}); "
                    "define that type at module level"
                ) from exc
        hints[name] = annotation
    return hints


def function_spec(
    function: Callable[..., object], name: str, description: str | None
) -> tuple[ToolSpec, type[BaseModel]]:
    """The spec a model sees and the argument model that validates its calls."""
    if not name.isidentifier():
        raise ConfigurationError(f"tool name {name!r} must be a Python identifier")
    summary, argument_texts = parse_docstring(inspect.getdoc(function) or "")
    text = description or summary
    if not text:
        raise ConfigurationError(
            f"tool {name!r} needs a docstring with a summary line, or a description"
        )
    hints = argument_hints(function, name)
    context = context_parameter(function, hints, name)  # the run's, never in the schema
    fields: dict[str, FieldSpec] = {}
    for param in inspect.signature(function).parameters.values():
        if param.name == context:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(f"tool {name!r}: *args/**kwargs are not supported")
        if param.name not in hints:
            raise ConfigurationError(f"tool {name!r}: argument {param.name!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], default)
    what = f"tool {name!r}"
    model = typed_model(f"{name}_args", fields, what)
    parameters = model_schema(model, what)
    describe_arguments(parameters, argument_texts)
    return ToolSpec(name, text, parameters), model


def tools_fingerprint(specs: Iterable[ToolSpec]) -> str:
    """A short digest of a tool set as the model sees it (names, descriptions, schemas)."""
    text = json.dumps([s.full() for s in specs], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
