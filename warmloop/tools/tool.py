"""A tool from a typed Python function, and how a call's arguments are read and checked.

`Tool.from_function` (or the `tool` decorator) takes the schema from the type hints and the
descriptions from the docstring (`warmloop.tools.schema`); `parse_arguments` decodes a
call's raw argument text, and `describe_invalid` says why arguments were refused, in words
the model can act on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import overload

from pydantic import BaseModel, ValidationError

from warmloop.errors import ConfigurationError
from warmloop.messages import JsonObject
from warmloop.tools.context import context_parameter, current_context, deps_type
from warmloop.tools.invoke import check_timeout, describe_exception, encodable_object
from warmloop.tools.schema import ToolSpec, argument_hints, function_spec

ToolFunction = Callable[..., object] | Callable[..., Awaitable[object]]


@dataclass(frozen=True)
class Tool:
    """A callable tool: its spec, the argument model that validates calls, the function,
    and its own time limit in seconds (None: the toolbox's; math.inf: none).
    `repeatable=False` marks a tool unsafe to run twice (it sends, pays, deletes): a run
    recovered after a crash answers its unfinished call "interrupted" instead of running it
    again. `expected_seconds`: how long a call usually takes, for a tool known to wait long
    (a test run, a human's approval): the keep-alive rule starts from it before the agent
    has seen the tool run (None: no hint). `context`: the name of the function's first
    parameter when it takes the run's `RunContext` (never in the schema); `deps`: the deps
    class that context declares, when one can be checked. `errors_to_model=True` sends an
    exception the function raises to the model as the call's error result; by default
    (None: the agent's `tool_errors_to_model`) only `ModelRetry` goes to the model and any
    other exception ends the run. `needs_approval=True` (the OpenAI Agents SDK's name): a
    call of the tool is not run until a person decides; the run ends waiting for it
    (`WaitingForApproval`), and `agent.resume(session, approvals=...)` goes on, in any
    process."""

    spec: ToolSpec
    args_model: type[BaseModel]
    function: ToolFunction = field(repr=False)
    timeout: float | None = None
    repeatable: bool = True
    expected_seconds: float | None = None
    context: str | None = None
    deps: type | None = None
    errors_to_model: bool | None = None
    needs_approval: bool = False

    def __post_init__(self) -> None:
        check_timeout(self.timeout, f"tool {self.spec.name!r}")
        check_timeout(self.expected_seconds, f"tool {self.spec.name!r}'s expected_seconds")

    @property
    def name(self) -> str:
        return self.spec.name

    def keywords(self, arguments: dict[str, object]) -> dict[str, object]:
        """The keyword arguments to call the function with: validated `arguments`, and the
        run's context first when the function takes it."""
        if self.context is None:
            return arguments
        return {self.context: current_context(), **arguments}

    @classmethod
    def from_function(
        cls,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        repeatable: bool = True,
        expected_seconds: float | None = None,
        errors_to_model: bool | None = None,
        needs_approval: bool = False,
    ) -> Tool:
        """The schema from the type hints; the description and each argument's
        description from the docstring (Google, NumPy or Sphinx style)."""
        tool_name = name or str(getattr(function, "__name__", ""))
        spec, model = function_spec(function, tool_name, description)
        hints = argument_hints(function, tool_name)
        context = context_parameter(function, hints, tool_name)
        deps = None if context is None else deps_type(hints[context])
        return cls(
            spec,
            model,
            function,
            timeout,
            repeatable,
            expected_seconds,
            context,
            deps,
            check_flag(errors_to_model, "errors_to_model"),
            needs_approval=_flag(needs_approval, "needs_approval"),
        )


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False, got {value!r}")
    return value


@overload
def tool(function: ToolFunction, /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    repeatable: bool = True,
    expected_seconds: float | None = None,
    errors_to_model: bool | None = None,
    needs_approval: bool = False,
) -> Callable[[ToolFunction], Tool]: ...
def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    repeatable: bool = True,
    expected_seconds: float | None = None,
    errors_to_model: bool | None = None,
    needs_approval: bool = False,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Decorator: `@tool` or `@tool(name=..., description=..., timeout=..., repeatable=...,
    expected_seconds=..., errors_to_model=..., needs_approval=...)`."""
    if function is not None:
        return Tool.from_function(function)
    check_timeout(timeout, "tool")
    check_timeout(expected_seconds, "tool expected_seconds")
    check_flag(errors_to_model, "errors_to_model")
    return lambda f: Tool.from_function(
        f,
        name=name,
        description=description,
        timeout=timeout,
        repeatable=repeatable,
        expected_seconds=expected_seconds,
        errors_to_model=errors_to_model,
        needs_approval=needs_approval,
    )


def check_flag(value: bool | None, name: str) -> bool | None:
    """A valid tri-state switch (True, False or None), or a ConfigurationError."""
    if value is not None and not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True, False or None, got {value!r}")
    return value


def describe_validation_error(error: ValidationError) -> str:
    """A one-line-per-problem account of a pydantic validation error."""
    lines = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(arguments)"
        lines.append(f"- {where}: {item['msg']}")
    return "\n".join(lines)


def describe_invalid(exc: Exception) -> str:
    """Why arguments were refused: pydantic's per-field account, or the exception itself
    (a validator that raised something other than ValueError)."""
    if isinstance(exc, ValidationError):
        return describe_validation_error(exc)
    if isinstance(exc, ValueError):
        return describe_exception(exc).removeprefix("ValueError: ")
    return f"- a validator failed: {describe_exception(exc)}"


def _no_constant(name: str) -> float:
    # Python's json reads NaN and Infinity, which JSON does not have: a float output would
    # then validate as a number that is none.
    raise ValueError(f"{name} is not a JSON value; use a finite number or null")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large to be a finite number")
    return value


def parse_arguments(raw: str | None) -> JsonObject:
    """Decode a tool call's raw argument string into an object (missing or null: `{}`),
    every string made encodable; ValueError says why not."""
    try:
        value = (
            json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
            if raw is not None and raw.strip()
            else {}
        )
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})") from exc
    except ValueError as exc:  # NaN, Infinity, or a number too large to be finite
        raise ValueError(f"arguments are not valid JSON ({exc})") from exc
    except RecursionError as exc:
        raise ValueError("arguments are nested too deeply") from exc
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return encodable_object(value)
