"""Unknown keyword arguments of the public entry points, answered with the closest valid
name (a `ConfigurationError`, never Python's bare `TypeError`).

Users coming from other agent libraries type their names (`system_prompt=`, `output_type=`,
`message_history=`): `ALIASES` maps the ones with an equivalent here to ours.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import ParamSpec, TypeVar, cast

from warmloop.errors import ConfigurationError

P = ParamSpec("P")
R = TypeVar("R")

ALIASES: Mapping[str, str] = {
    "system_prompt": "instructions",  # pydantic-ai, LangChain
    "output_type": "outputs",  # pydantic-ai, the OpenAI Agents SDK
    "result_type": "outputs",  # pydantic-ai before 0.1
    "retries": "max_tool_retries",  # pydantic-ai
    "max_turns": "max_steps",  # the OpenAI Agents SDK
    "max_iterations": "max_steps",  # LangChain
    "message_history": "history",  # pydantic-ai
    "user_prompt": "task",  # pydantic-ai
    "input": "task",  # the OpenAI Agents SDK
    "n_ctx": "context_window",  # llama.cpp's name, where a provider has no n_ctx
}
"""Names other agent libraries use, and ours for the same thing."""


def suggestion(name: str, valid: Collection[str]) -> str | None:
    """The valid name `name` was most likely meant as: its alias, else the closest
    spelling (difflib); None when nothing is close."""
    alias = ALIASES.get(name)
    if alias is not None and alias in valid:
        return alias
    close = difflib.get_close_matches(name, sorted(valid), n=1, cutoff=0.6)
    return close[0] if close else None


def described(name: str, valid: Collection[str]) -> str:
    """`name` quoted, with the valid name it most likely meant: `'system_prompt' (did you
    mean instructions=?)`."""
    meant = suggestion(name, valid)
    return f"{name!r} (did you mean {meant}=?)" if meant is not None else repr(name)


def unknown_keywords(what: str, given: Iterable[str], valid: Collection[str]) -> None:
    """Raise a ConfigurationError naming each of `given` that `what` does not take, with
    the name it most likely meant and the names it takes."""
    unknown = sorted(set(given) - set(valid))
    if unknown:
        names = ", ".join(described(name, valid) for name in unknown)
        raise ConfigurationError(
            f"{what} takes no keyword argument {names}; it takes: {', '.join(sorted(valid))}"
        )


def keyword_names(function: Callable[..., object]) -> frozenset[str]:
    """The names `function` takes as keyword arguments (`self` aside)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(function).parameters.values()
    return frozenset(p.name for p in parameters if p.kind in kinds and p.name != "self")


def checked_keywords(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a public function so an unknown keyword argument is a ConfigurationError
    naming the closest valid one (see `unknown_keywords`); its signature is unchanged, so
    a type checker still sees every parameter. An async function stays async."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        valid = keyword_names(function)
        if inspect.iscoroutinefunction(function):
            coroutine = cast(Callable[P, Awaitable[object]], function)

            @functools.wraps(function)
            async def checked_async(*args: P.args, **kwargs: P.kwargs) -> object:
                unknown_keywords(what, kwargs, valid)
                return await coroutine(*args, **kwargs)

            return cast(Callable[P, R], checked_async)

        @functools.wraps(function)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            unknown_keywords(what, kwargs, valid)
            return function(*args, **kwargs)

        return checked

    return decorate
