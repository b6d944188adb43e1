"""`ModelSettings`: the sampling and reasoning settings every provider is asked in one
vocabulary, checked once, and where each provider's request keeps each of them.

A `TypedDict` (total=False), as pydantic-ai's: a plain dict an editor completes and
`mypy --strict` checks, and a run's settings merge over its agent's as `{**agent, **run}`.
What each provider calls a setting is declared on its record (`ProviderRecord.settings`, a
tuple of `Place`), so a third-party provider declares its own mapping; a setting its
record does not place is refused naming the provider (`applied_settings`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict, cast, get_args, runtime_checkable

from warmloop.errors import ConfigurationError
from warmloop.keywords import described
from warmloop.messages import JsonValue

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
"""OpenAI's reasoning efforts, the widest documented set; a provider may take fewer."""


class ModelSettings(TypedDict, total=False):
    """Settings for a model's requests, accepted by every provider that documents each one.

    `temperature` (0 to 2), `top_p` (0 to 1), `max_tokens` (the answer's limit, >= 1),
    `stop` (sequences that end the answer), `seed` (an integer for repeatable sampling),
    `reasoning_effort` (`low`, `medium`, `high`, ...), `thinking_budget` (tokens a model
    may think for; 0 turns thinking off), `parallel_tool_calls` (whether one turn may call
    several tools). A setting a provider does not document is refused when the run starts.
    """

    temperature: float
    top_p: float
    max_tokens: int
    stop: list[str]
    seed: int
    reasoning_effort: ReasoningEffort
    thinking_budget: int
    parallel_tool_calls: bool


SETTINGS: tuple[str, ...] = tuple(ModelSettings.__annotations__)
"""Every setting's name, in the declared order."""
EFFORTS: tuple[str, ...] = get_args(ReasoningEffort)


@dataclass(frozen=True)
class Place:
    """Where one provider's request keeps one setting: the key path in its payload, and
    the value's shape there (`shape`, the setting's own value when None). `keys_cache`: the
    provider keys its prompt cache on this field (Anthropic's thinking and tool choice), so
    it is part of the stream the prefix guard compares; any other setting is sampling only
    and left out of it, as a routing key is. `values`: the values this provider takes,
    when fewer than `ModelSettings` allows."""

    setting: str
    path: tuple[str, ...]
    shape: Callable[[Any], JsonValue] | None = None
    keys_cache: bool = False
    values: tuple[str, ...] = ()

    def value(self, given: Any) -> JsonValue:
        """The setting's value as this provider's field holds it."""
        return self.shape(given) if self.shape is not None else given


@runtime_checkable
class KeepsSettings(Protocol):
    """A request that is no dict but keeps model settings itself (the local model's prompt
    template, whose settings go to its sampler): `with_setting` returns a copy holding
    `value` for the setting at `path`, its `Place.path`."""

    def with_setting(self, path: tuple[str, ...], value: Any) -> KeepsSettings:
        """A copy of this request with `value` at `path`."""
        ...


def _number(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"model setting {name} must be a number, got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise ConfigurationError(
            f"model setting {name} must be a finite number from {low:g} to {high:g}, got {value!r}"
        )
    return float(value)


def _integer(name: str, value: object, low: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"model setting {name} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise ConfigurationError(f"model setting {name} must be >= {low}, got {value!r}")
    return value


def _stop(value: object) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise ConfigurationError(
            f"model setting stop must be a string or a non-empty list of strings, got {value!r}"
        )
    for item in items:
        if not isinstance(item, str) or not item:
            raise ConfigurationError(
                f"model setting stop must hold non-empty strings, got {item!r}"
            )
    return list(items)


def _effort(value: object) -> str:
    if not isinstance(value, str) or value not in EFFORTS:
        raise ConfigurationError(
            f"model setting reasoning_effort must be one of {', '.join(EFFORTS)}, got {value!r}"
        )
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"model setting parallel_tool_calls must be true or false, got {value!r}"
        )
    return value


_CHECKS: dict[str, Callable[[object], object]] = {
    "temperature": lambda v: _number("temperature", v, 0.0, 2.0),
    "top_p": lambda v: _number("top_p", v, 0.0, 1.0),
    "max_tokens": lambda v: _integer("max_tokens", v, 1),
    "stop": _stop,
    "seed": lambda v: _integer("seed", v, None),
    "reasoning_effort": _effort,
    "thinking_budget": lambda v: _integer("thinking_budget", v, 0),
    "parallel_tool_calls": _flag,
}


def check_settings(value: object, where: str = "model_settings") -> ModelSettings:
    """`value` as checked `ModelSettings` (a copy; `stop` as a list): a mapping of known
    settings, each of its type and range. Anything else is a ConfigurationError naming the
    setting (an unknown one with the closest known name)."""
    if value is None:
        return ModelSettings()
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{where} must be a dict of model settings such as {{'temperature': 0.2}}, "
            f"got {value!r}"
        )
    checked: dict[str, object] = {}
    for name, given in value.items():
        check = _CHECKS.get(name) if isinstance(name, str) else None
        if check is None:
            raise ConfigurationError(
                f"{where} has no setting {described(str(name), SETTINGS)}; "
                f"the settings are: {', '.join(SETTINGS)}"
            )
        checked[name] = check(given)
    return cast(ModelSettings, checked)  # each key and value checked above


def merged(agent: ModelSettings, run: object) -> ModelSettings:
    """A run's settings over its agent's: each setting the run gives replaces the agent's."""
    return cast(ModelSettings, {**agent, **check_settings(run)})
