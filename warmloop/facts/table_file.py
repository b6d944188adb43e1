"""Reading a dated table (`profiles.json`, `prices.json`, a user price file): the one loader.

A table is a JSON object; a key that appears twice in one object is an error (JSON keeps
the last one silently, which would hide an edit). Both tables go through `read_table`, the
shipped ones through `shipped_text`.
"""

from __future__ import annotations

import json
from importlib import resources

from warmloop.errors import ConfigurationError


def shipped_text(name: str) -> str:
    """The text of a table file shipped with warmloop (`profiles.json`, `prices.json`)."""
    return resources.files("warmloop.facts").joinpath(name).read_text("utf-8")


def read_table(text: str, where: str) -> object:
    """The JSON value of a table file (its caller checks the shape); `where` names the
    table in error messages."""
    try:
        data: object = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{where} is not valid JSON ({exc}); fix the file") from exc
    except _DuplicateKey as exc:
        raise ConfigurationError(
            f"{where}: key {exc.key!r} appears twice in one object; remove the duplicate"
        ) from exc
    return data


def string_map(value: object, what: str) -> dict[str, str]:
    """`value` as a map of strings to strings (aliases, ids); `what` names it in the error."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigurationError(f"{what} must map strings to strings")
    return dict(value)


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen
