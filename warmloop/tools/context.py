"""What a tool may learn of the run calling it: `RunContext`, taken by a first parameter
annotated with it and never shown in the tool's schema (the tool block stays the same bytes).

The run in progress sets the context before it runs a step's calls (`running`); the tool's
call reads it wherever it runs (an asyncio task or a worker thread copy the context vars).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, get_args, get_origin

from typing_extensions import TypeVar

from warmloop.errors import ConfigurationError
from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.usage import Usage
from warmloop.messages import Message

DepsT = TypeVar("DepsT", default=None)


@dataclass(frozen=True)
class RunContext(Generic[DepsT]):
    """The run a tool is called in: `deps` (the run's `deps=`; None without), `messages`
    (the transcript so far, read-only), `usage` (the run's requests so far, and those of
    the runs its tool calls started that ended: sub-agents), `facts` (the
    model's; None outside a run), `step` (1 for the run's first request)."""

    deps: DepsT
    messages: Sequence[Message] = ()
    usage: Usage = field(default_factory=Usage)
    facts: ModelFacts | None = None
    step: int = 0


_CURRENT: ContextVar[RunContext[object] | None] = ContextVar("warmloop_run_context", default=None)


def current_context() -> RunContext[object]:
    """The context of the run calling a tool now; outside a run, one with no deps."""
    context = _CURRENT.get()
    return RunContext(None) if context is None else context


@contextlib.contextmanager
def running(context: RunContext[object]) -> Iterator[None]:
    """Tools called inside the block get `context`."""
    token = _CURRENT.set(context)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def is_context(annotation: object) -> bool:
    """Whether `annotation` is `RunContext` or `RunContext[X]`."""
    return annotation is RunContext or get_origin(annotation) is RunContext


def context_parameter(
    function: Callable[..., object], hints: Mapping[str, object], tool_name: str
) -> str | None:
    """The name of `function`'s RunContext parameter (it must be the first), or None."""
    names = list(inspect.signature(function).parameters)
    found = [name for name in names if is_context(hints.get(name))]
    if not found:
        return None
    if found != names[:1]:
        raise ConfigurationError(
            f"tool {tool_name!r}: the RunContext parameter {found[0]!r} must be the first "
            "parameter (and the only one); move it first"
        )
    return found[0]


def deps_type(annotation: object) -> type | None:
    """The deps class `RunContext[X]` declares when X is a plain class (checkable with
    isinstance); None when it declares none, `None`, or a type that cannot be checked."""
    args = get_args(annotation)
    if len(args) != 1 or args[0] in (Any, type(None)) or get_args(args[0]):
        return None
    return args[0] if isinstance(args[0], type) else None
