"""An output type as `submit` takes it: a pydantic model of its arguments, and how that
model turns back into the declared type.

`submit` is a tool, and a tool's arguments are an object: a pydantic model, a dataclass or
a TypedDict is that object (its fields are submit's arguments); a scalar or a container
(`int`, `list[str]`, `list[City]`) is wrapped in one argument named `output`.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from pydantic import BaseModel, Field

from warmloop.errors import ConfigurationError
from warmloop.tools.schema import FieldSpec, typed_model

Convert = Callable[[BaseModel], object]
"""Validated submit arguments -> the declared output."""
WRAPPED = "output"
"""The one argument of submit that carries a scalar or container output."""
SCALARS = (int, str, float, bool)
ACCEPTED = (
    "a pydantic model, a dataclass, a TypedDict, int, str, float, bool, a list of them "
    "(list[str], list[City]), a dict with str keys of them, or a mapping of name -> type"
)


def output_model(kind: object) -> tuple[type[BaseModel], Convert]:
    """Submit's argument model for the output type `kind`, and its conversion back."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return kind, same
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _dataclass_model(kind)
    if isinstance(kind, type) and is_typeddict(kind):  # a TypedDict is a class
        return _typeddict_model(kind)
    if not carried(kind):
        raise ConfigurationError(
            f"outputs={kind!r} is not a type submit can carry: give {ACCEPTED}"
        )
    model = typed_model("Outputs", {WRAPPED: (kind, ...)}, "outputs")
    return model, _unwrap


def carried(kind: object) -> bool:
    """Whether `kind` is a value submit can carry as JSON and give back as itself."""
    if kind in SCALARS or kind is type(None):
        return True
    if isinstance(kind, type):
        return issubclass(kind, BaseModel) or dataclasses.is_dataclass(kind) or is_typeddict(kind)
    origin, args = get_origin(kind), get_args(kind)
    if origin is list:
        return len(args) == 1 and carried(args[0])
    if origin is dict:  # JSON object keys are strings
        return len(args) == 2 and args[0] is str and carried(args[1])
    if origin in (Union, types.UnionType):
        return all(carried(arg) for arg in args)
    if origin is Literal:
        return all(isinstance(arg, (*SCALARS, type(None))) for arg in args)
    return False


def _hints(kind: type, what: str) -> dict[str, object]:
    try:
        return get_type_hints(kind)
    except NameError as exc:
        raise ConfigurationError(
            f"{what}: cannot resolve a field's type ({exc}); define it at module level"
        ) from exc


def _dataclass_model(kind: type) -> tuple[type[BaseModel], Convert]:
    hints = _hints(kind, f"outputs={kind.__name__}")
    fields: dict[str, FieldSpec] = {}
    for item in dataclasses.fields(kind):
        if not item.init:
            continue
        if item.default is not dataclasses.MISSING:
            default: object = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=item.default_factory)
        else:
            default = ...
        fields[item.name] = (hints[item.name], default)
    model = typed_model(kind.__name__, fields, f"outputs={kind.__name__}")

    def convert(outputs: BaseModel) -> object:
        return kind(**{name: getattr(outputs, name) for name in fields})

    return model, convert


def _typeddict_model(kind: type) -> tuple[type[BaseModel], Convert]:
    hints = _hints(kind, f"outputs={kind.__name__}")
    required: frozenset[str] = getattr(kind, "__required_keys__")  # noqa: B009 (a TypedDict's)
    fields = {name: (hint, ... if name in required else None) for name, hint in hints.items()}
    model = typed_model(kind.__name__, fields, f"outputs={kind.__name__}")

    def convert(outputs: BaseModel) -> object:
        given = required | outputs.model_fields_set  # a key not required is left out unless given
        return {name: getattr(outputs, name) for name in fields if name in given}

    return model, convert


def same(outputs: BaseModel) -> BaseModel:
    """The outputs as they are (a pydantic model, or the named fields)."""
    return outputs


def _unwrap(outputs: BaseModel) -> object:
    return getattr(outputs, WRAPPED)
