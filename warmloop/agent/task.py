"""The task a run is given: a string as is, or named inputs written as `name: value` lines,
each checked to be something a request can carry."""

from __future__ import annotations

import math
from collections.abc import Mapping

from warmloop.errors import ConfigurationError


def task_text(task: str | Mapping[str, object]) -> str:
    """A task string as is; named inputs as `name: value` lines."""
    if isinstance(task, str):
        text = task
    elif isinstance(task, Mapping):
        for name, value in task.items():
            check_input(name, value)
        text = "\n".join(f"{name}: {value}" for name, value in task.items())
    else:
        raise ConfigurationError(f"the task must be a string or a mapping, got {task!r}")
    if not text.strip():
        raise ConfigurationError("the task is empty")
    return text


def check_input(name: object, value: object) -> None:
    """A named input that can be written into a request: no NaN or infinity anywhere in
    its value (`nan` is no value a model can use, and no JSON)."""
    pending = [value]
    while pending:  # not recursive: a value nested deeper than Python's stack is checked too
        item = pending.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ConfigurationError(
                f"input {name!r} holds {item!r}, which is no number a model can use; "
                "give a finite number, or a text that says what is meant"
            )
        if isinstance(item, Mapping):
            pending += item.values()
        elif isinstance(item, (list, tuple, set, frozenset)):
            pending += item
