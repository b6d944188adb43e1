"""A run's `deps=` against what the agent and its tools declare: a tool that takes
`RunContext[Shop]` must be given a Shop, checked as the agent is built (`deps_type=`) and as
each run starts (`deps=`), before any request is sent."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from warmloop.errors import ConfigurationError
from warmloop.tools.catalog import RemoteTool
from warmloop.tools.tool import Tool
from warmloop.tools.toolbox import Toolbox


def _declaring(toolbox: Toolbox) -> Iterator[tuple[Tool, type]]:
    """Each tool of `toolbox` whose RunContext declares a checkable deps class."""
    entries: list[Tool | RemoteTool | None] = [toolbox.get(name) for name in toolbox.names]
    entries += [toolbox.catalog.get(name) for name in toolbox.catalog.names()]
    for entry in entries:
        if entry is not None and not isinstance(entry, RemoteTool) and entry.deps is not None:
            yield entry, entry.deps


def _each_tool_takes(toolbox: Toolbox, takes: Callable[[type], bool], given: str, do: str) -> None:
    """Refuse, naming the first tool whose declared deps class does not take what is given."""
    for tool, kind in _declaring(toolbox):
        if not takes(kind):
            raise ConfigurationError(
                f"tool {tool.name!r} takes RunContext[{kind.__name__}], but {given}; "
                + do.format(kind=kind.__name__)
            )


def _is(value: object, kind: type) -> bool:
    try:
        return isinstance(value, kind)
    except TypeError:  # a Protocol that is not runtime-checkable: nothing to check
        return True


def _subclass(kind: type, of: type) -> bool:
    try:
        return issubclass(kind, of)
    except TypeError:
        return True


def check_deps_type(deps_type: object, toolbox: Toolbox) -> type | None:
    """The agent's `deps_type=`: a class every tool's declared deps class accepts."""
    if deps_type is None:
        return None
    if not isinstance(deps_type, type):
        raise ConfigurationError(
            f"deps_type must be a class (the type of each run's deps=), got {deps_type!r}"
        )
    given = f"the agent's deps_type is {deps_type.__name__}"
    _each_tool_takes(
        toolbox, lambda kind: _subclass(deps_type, kind), given, "make them the same class"
    )
    return deps_type


def check_deps(deps: object, deps_type: type | None, toolbox: Toolbox) -> None:
    """A run's `deps=`: of the agent's `deps_type`, and of each tool's declared class."""
    if deps_type is not None and deps is not None and not _is(deps, deps_type):
        raise ConfigurationError(
            f"deps= is a {type(deps).__name__}, but the agent's deps_type is "
            f"{deps_type.__name__}; pass a {deps_type.__name__}"
        )
    given = f"this run's deps= is {deps!r}"
    _each_tool_takes(toolbox, lambda kind: _is(deps, kind), given, "pass deps={kind}(...) to run()")
