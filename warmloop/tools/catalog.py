"""The searchable catalog: tools kept out of the tool block, in name order, each callable
with a dict of arguments that is validated against that tool's own schema first.

A catalog tool is either a Python `Tool` (validated by its pydantic model) or a
`RemoteTool` such as an MCP server's (a JSON schema, checked in bounded time by
`remote_schema`, and an async call). Both run under the same time limit rules as the
toolbox's own tools and come back as a value (code mode) or as text (the gateway); nothing a
tool does escapes as an exception. A remote tool whose schema cannot be used is refused when
it is added (an MCP server's is skipped with a warning).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from warmloop.errors import ConfigurationError, ToolFailed
from warmloop.messages import JsonData, ToolCall
from warmloop.tools import remote_schema
from warmloop.tools.announce import untagged
from warmloop.tools.invoke import (
    Execution,
    Outcome,
    StuckCall,
    check_timeout,
    describe_exception,
    executed,
    failure_told,
    invoke,
    stringify,
    timed_out,
)
from warmloop.tools.schema import ToolSpec
from warmloop.tools.search import Index
from warmloop.tools.tool import Tool, describe_invalid


@dataclass(frozen=True)
class RemoteTool:
    """A tool described by a JSON schema and run by an async call with the argument dict
    (an MCP server's tool). `unavailable()` says why it cannot run now ("" when it can)."""

    spec: ToolSpec
    call: Callable[[dict[str, object]], Awaitable[object]] = field(repr=False)
    timeout: float | None = None
    unavailable: Callable[[], str] = field(default=lambda: "", repr=False)

    @property
    def name(self) -> str:
        return self.spec.name


Entry = Tool | RemoteTool


def validated(entry: Entry, arguments: Mapping[str, object]) -> dict[str, object]:
    """The keyword arguments to call `entry` with; ValueError says what is wrong with them,
    `Uncheckable` why a remote tool's schema cannot tell."""
    if isinstance(entry, RemoteTool):
        problems = remote_schema.problems(entry.spec.parameters, arguments)
        if problems:
            raise ValueError("\n".join(problems))
        return dict(arguments)
    try:
        model = entry.args_model.model_validate(dict(arguments))
    except Exception as exc:  # validators may raise anything; the model must hear why
        raise ValueError(describe_invalid(exc)) from exc
    return {name: getattr(model, name) for name in type(model).model_fields}


async def call_entry(
    entry: Entry, kwargs: dict[str, object], default_limit: float | None
) -> Outcome:
    """Run `entry` with validated `kwargs` within its time limit (or the default)."""
    limit = default_limit if entry.timeout is None else entry.timeout
    limit = None if limit is None or math.isinf(limit) else limit
    if isinstance(entry, RemoteTool):
        reason = entry.unavailable()
        if reason:
            return Outcome(error=ToolFailed(reason))
        remote = entry

        async def run_remote() -> object:
            return await remote.call(kwargs)

        return await invoke(run_remote, {}, limit, entry.name)
    return await invoke(entry.function, entry.keywords(kwargs), limit, entry.name)


def failure_text(name: str, outcome: Outcome) -> str:
    """What the model is told when a catalog tool failed or timed out."""
    if outcome.timed_out:
        return f"{name} timed out and was stopped. Try a smaller request or another way."
    error = outcome.error
    if isinstance(error, ToolFailed):
        return f"{name} failed: {error}"
    assert error is not None
    return f"{name} failed: {describe_exception(error)}"


async def run_entry(
    call: ToolCall,
    entry: Entry,
    arguments: JsonData,
    default_limit: float | None,
    cap: int | None,
    stuck: list[StuckCall],
    errors_to_model: bool = False,
) -> Execution:
    """`call` of catalog tool `entry` with the model's `arguments`: checked against the
    tool's own schema first, run within its time limit (or `default_limit`), its result capped at
    `cap`; a bad argument, a remote tool's failure, a time-out or a value that cannot be
    shown becomes the tool error the model reads (a call left running joins `stuck`); a
    Python tool's exception as a core tool's does (`invoke.failure_told`, with the agent's
    `errors_to_model` where the tool does not say)."""
    name = entry.name

    def error(text: str) -> Execution:
        return Execution(executed(call, text, is_error=True, cap=cap).result)

    if not isinstance(arguments, dict):
        return error(f"Invalid arguments for {name}: {arguments}")
    try:
        kwargs = validated(entry, arguments)
    except ValueError as exc:
        return error(
            f"Invalid arguments for {name}:\n{exc}\nExpected: {untagged(entry.spec.compact())}"
        )
    except ToolFailed as exc:  # its schema cannot check them (see remote_schema)
        return error(f"{name} cannot be called: {exc}")
    outcome = await call_entry(entry, kwargs, default_limit)
    if outcome.timed_out:
        timed = timed_out(call, default_limit, outcome.left_running, cap, stuck)
        return replace(timed, result=replace(timed.result, content=failure_text(name, outcome)))
    if outcome.error is not None:
        own = True if isinstance(entry, RemoteTool) else entry.errors_to_model
        to_model = errors_to_model if own is None else own
        return error(failure_told(name, outcome.error, to_model=to_model))
    try:
        text = stringify(outcome.value)
    except Exception as exc:
        return error(f"{name} returned a value that cannot be shown: {exc}")
    return executed(call, text, is_error=False, cap=cap)


def _used_twice(name: str) -> str:
    return (
        f"tool name {name!r} is used twice (by the catalog, a core tool, the toolbox's own "
        "tools, or outputs, whose tool is 'submit'); names must be unique"
    )


class Catalog:
    """Tools kept out of the tool block, always in name order, with a BM25F index."""

    def __init__(self, entries: Iterable[Entry] = (), *, reserved: Iterable[str] = ()) -> None:
        self._entries: dict[str, Entry] = {}
        self._index: Index | None = None
        self.reserved = frozenset(reserved)
        """Names taken outside the catalog (core tools, the toolbox's own)."""
        for entry in entries:
            self.add(entry)

    def add(self, entry: Entry) -> None:
        """Add a tool; a name already in use (or reserved), or a remote tool's schema that
        cannot be used, is a configuration error."""
        if entry.name in self._entries or entry.name in self.reserved:
            raise ConfigurationError(_used_twice(entry.name))
        if isinstance(entry, RemoteTool):
            why = remote_schema.unusable(entry.spec.parameters)
            if why:
                raise ConfigurationError(f"tool {entry.name!r} cannot be used: {why}")
        check_timeout(entry.timeout, f"tool {entry.name!r}")
        self._entries[entry.name] = entry
        self._index = None

    def reserve(self, name: str) -> None:
        """Keep `name` out of the catalog (a core tool has it); a catalog tool of that name
        is a configuration error."""
        if name in self._entries:
            raise ConfigurationError(_used_twice(name))
        self.reserved |= {name}

    def replace(self, old: Iterable[str], new: Iterable[Entry]) -> None:
        """Swap a group of tools (a reconnected server's) for its new listing."""
        for name in old:
            self._entries.pop(name, None)
        for entry in new:
            self.add(entry)
        self._index = None

    def names(self) -> list[str]:
        """Every name, sorted: the order never depends on how tools were listed."""
        return sorted(self._entries)

    def specs(self) -> tuple[ToolSpec, ...]:
        """Every tool's spec, in name order."""
        return tuple(self._entries[n].spec for n in self.names())

    def get(self, name: str) -> Entry | None:
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def search(self, query: str, limit: int) -> list[Entry]:
        """The best `limit` matches for `query` that can run now, best first."""
        if self._index is None:
            self._index = Index(self.specs())
        found = []
        for name, _ in self._index.rank(query, len(self._entries)):
            entry = self._entries[name]
            if isinstance(entry, RemoteTool) and entry.unavailable():
                continue
            found.append(entry)
            if len(found) == limit:
                break
        return found
