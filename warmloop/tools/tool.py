"""Tools from typed Python functions, and a Toolbox that executes calls into ToolResults.

Execution never raises into the loop for anything a tool or the model did: bad arguments,
unknown tools, exceptions, hangs, unprintable values and oversized results all come back
as a `ToolResult` the model can act on. `Toolbox.run` also says what happened on the way
(a cut, a timeout), so the caller can record it without reading the transcript.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

from pydantic import BaseModel, ValidationError

from warmloop.errors import ConfigurationError
from warmloop.messages import Notice, ToolCall, ToolResult
from warmloop.tools.invoke import (
    DEFAULT_TOOL_TIMEOUT,
    cap_text,
    check_result_cap,
    check_timeout,
    default_result_cap,
    describe_exception,
    encodable,
    encodable_json,
    invoke,
    stringify,
)
from warmloop.tools.schema import ToolSpec, clean_schema, function_spec, schema_type
from warmloop.transcript import Transcript

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "Execution",
    "StepTools",
    "StuckCall",
    "Tool",
    "ToolFunction",
    "ToolSpec",
    "Toolbox",
    "cap_text",
    "clean_schema",
    "default_result_cap",
    "describe_validation_error",
    "parse_arguments",
    "schema_type",
    "stringify",
    "tool",
]

logger = logging.getLogger(__name__)

ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    """A callable tool: its spec, the argument model that validates calls, the function,
    and its own time limit in seconds (None: the toolbox's; math.inf: none)."""

    spec: ToolSpec
    args_model: type[BaseModel]
    function: ToolFunction = field(repr=False)
    timeout: float | None = None

    def __post_init__(self) -> None:
        check_timeout(self.timeout, f"tool {self.spec.name!r}")

    @property
    def name(self) -> str:
        return self.spec.name

    @classmethod
    def from_function(
        cls,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """The schema from the type hints; the description and each argument's
        description from the docstring (Google, NumPy or Sphinx style)."""
        tool_name = name or str(getattr(function, "__name__", ""))
        spec, model = function_spec(function, tool_name, description)
        return cls(spec, model, function, timeout)


@overload
def tool(function: ToolFunction, /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[ToolFunction], Tool]: ...
def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Decorator: `@tool` or `@tool(name=..., description=..., timeout=...)`."""
    if function is not None:
        return Tool.from_function(function)
    check_timeout(timeout, "tool")
    return lambda f: Tool.from_function(f, name=name, description=description, timeout=timeout)


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


def parse_arguments(raw: str | None) -> dict[str, Any]:
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
    decoded: dict[str, Any] = encodable_json(value)
    return decoded


@dataclass(frozen=True)
class Execution:
    """One executed call: the result the model sees, and what happened on the way.

    `truncated_from` is the result's full length in characters when it was cut to
    `max_result_chars` (None: not cut); `timed_out` marks a call stopped by its time limit,
    and `stuck` one whose worker could not be stopped and is still running.
    """

    result: ToolResult
    truncated_from: int | None = None
    timed_out: bool = False
    stuck: bool = False


@dataclass(frozen=True)
class StuckCall:
    """A timed-out call whose worker (a thread, or a task that ignored cancellation) is
    still running; it holds whatever the tool holds until it returns."""

    call: ToolCall
    timeout: float
    since: float  # time.time() when it was given up on
    worker: threading.Thread | asyncio.Task[Any] = field(repr=False)

    @property
    def running(self) -> bool:
        """Whether the worker is still running."""
        if isinstance(self.worker, threading.Thread):
            return self.worker.is_alive()
        return not self.worker.done()


class StepTools(Protocol):
    """A toolbox as one conversation sees it for one step: runs that step's calls, then
    hands over the notices to append after their results."""

    async def run(self, call: ToolCall) -> Execution: ...

    def announcements(self) -> tuple[Notice, ...]: ...


class _OwnCap:
    """The default of a per-step cap: the toolbox's own `max_result_chars`."""

    def __repr__(self) -> str:
        return "OWN_CAP"


OWN_CAP = _OwnCap()
Cap = int | None | _OwnCap


class Toolbox:
    """An ordered set of tools with unique names; executes calls into ToolResults.

    `max_result_chars`: None (the default) never cuts; an int caps every result, errors
    included, notice included. `timeout`: seconds any tool without its own may run (None:
    no limit).
    """

    def __init__(
        self,
        tools: Iterable[Tool | ToolFunction] = (),
        *,
        max_result_chars: int | None = None,
        timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    ) -> None:
        self.max_result_chars = max_result_chars
        self.timeout = check_timeout(timeout, "the toolbox")
        self._tools: dict[str, Tool] = {}
        self._stuck: list[StuckCall] = []
        for item in tools:
            if not isinstance(item, Tool) and not callable(item):
                raise ConfigurationError(f"tools must be functions or Tool objects, got {item!r}")
            self.add(item if isinstance(item, Tool) else Tool.from_function(item))

    @property
    def max_result_chars(self) -> int | None:
        return self._max_result_chars

    @max_result_chars.setter
    def max_result_chars(self, value: int | None) -> None:
        self._max_result_chars = check_result_cap(value)

    def add(self, item: Tool) -> None:
        """Add a tool; a duplicate name is a configuration error."""
        if item.name in self._tools:
            raise ConfigurationError(f"two tools are named {item.name!r}; names must be unique")
        self._tools[item.name] = item

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def conversation(self, transcript: Transcript, *, max_result_chars: Cap = OWN_CAP) -> StepTools:
        """This toolbox as `transcript`'s conversation sees it for one step, results capped
        at `max_result_chars` (default: the toolbox's own): the same for every conversation
        here (`warmloop.tools.Toolbox` reads what each was taught)."""
        return _Step(self, self._cap(max_result_chars))

    def _cap(self, cap: Cap) -> int | None:
        return self.max_result_chars if isinstance(cap, _OwnCap) else check_result_cap(cap)

    def announcements(self) -> tuple[Notice, ...]:
        """Notices to append after a step's results: none from a plain toolbox."""
        return ()

    @property
    def stuck(self) -> tuple[StuckCall, ...]:
        """Timed-out calls whose worker is still running (finished ones drop out)."""
        self._stuck = [s for s in self._stuck if s.running]
        return tuple(self._stuck)

    def error(self, call: ToolCall, message: str, cap: Cap = OWN_CAP) -> ToolResult:
        """An error result for `call`, made encodable and capped like every result."""
        return self._result(call, message, is_error=True, cap=self._cap(cap)).result

    def _result(self, call: ToolCall, text: str, *, is_error: bool, cap: int | None) -> Execution:
        shown, cut_from = cap_text(encodable(text), cap)
        return Execution(ToolResult(call.id, call.name, shown, is_error), cut_from)

    def validate(self, call: ToolCall) -> tuple[Tool, BaseModel] | ToolResult:
        """The tool and its validated arguments, or the error result to send back."""
        checked = self._check(call, self.max_result_chars)
        return checked.result if isinstance(checked, Execution) else checked

    def _check(self, call: ToolCall, cap: int | None) -> tuple[Tool, BaseModel] | Execution:
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(self._tools) or "(none)"
            text = f"Unknown tool {call.name!r}. Available tools: {known}."
            return self._result(call, text, is_error=True, cap=cap)
        try:
            args = found.args_model.model_validate(parse_arguments(call.arguments))
        except Exception as exc:  # validators may raise anything; the model must hear why
            return self._result(
                call,
                f"Invalid arguments for {call.name}:\n{describe_invalid(exc)}\n"
                f"Expected: {found.spec.compact()}",
                is_error=True,
                cap=cap,
            )
        return found, args

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run one call. Never raises for anything the tool or the model did."""
        return (await self.run(call)).result

    async def run(self, call: ToolCall, *, max_result_chars: Cap = OWN_CAP) -> Execution:
        """Run one call and say what happened: cut (at `max_result_chars`, default the
        toolbox's own), timed out, left running."""
        cap = self._cap(max_result_chars)
        checked = self._check(call, cap)
        if isinstance(checked, Execution):
            return checked
        found, args = checked
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        limit = self.timeout if found.timeout is None else found.timeout
        limit = None if limit is None or math.isinf(limit) else limit
        outcome = await invoke(found.function, kwargs, limit, call.name)
        if outcome.timed_out:
            return self._timed_out(call, limit, outcome.left_running, cap)
        if outcome.error is not None:
            text = f"{call.name} failed: {describe_exception(outcome.error)}"
            return self._result(call, text, is_error=True, cap=cap)
        try:
            text = stringify(outcome.value)
        except Exception as exc:  # tuple keys, cycles, a __str__ that raises, ...
            return self._result(
                call,
                f"{call.name} returned a value that cannot be shown as text: "
                f"{describe_exception(exc)}",
                is_error=True,
                cap=cap,
            )
        return self._result(call, text, is_error=False, cap=cap)

    def _timed_out(
        self,
        call: ToolCall,
        limit: float | None,
        worker: threading.Thread | asyncio.Task[Any] | None,
        cap: int | None,
    ) -> Execution:
        seconds = f"{limit:g}" if limit is not None else "?"
        text = (
            f"{call.name} timed out after {seconds} s and was stopped. Try a smaller request "
            "or another way."
        )
        if worker is not None:
            self._stuck.append(StuckCall(call, limit or 0.0, time.time(), worker))
            logger.warning(
                "tool %r (call %s) is still running after its %s s timeout and cannot be "
                "stopped; it is reported in Toolbox.stuck",
                call.name,
                call.id,
                seconds,
            )
            text = (
                f"{call.name} timed out after {seconds} s and is still running in the "
                "background; its result will not arrive. Try a smaller request or another way."
            )
        execution = self._result(call, text, is_error=True, cap=cap)
        return Execution(execution.result, execution.truncated_from, True, worker is not None)


class _Step:
    """A plain toolbox for one step: runs calls with that step's result cap."""

    def __init__(self, box: Toolbox, cap: int | None) -> None:
        self.box = box
        self.cap = cap

    async def run(self, call: ToolCall) -> Execution:
        return await self.box.run(call, max_result_chars=self.cap)

    def announcements(self) -> tuple[Notice, ...]:
        return ()
