"""What warmloop reads of an Acme exchange: its usage object, and whether a body has
Acme's shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from warmloop.facts.usage import Usage


def read_usage(raw: Mapping[str, Any]) -> Usage:
    """Acme's usage object: `fresh` and `reused` prompt tokens, `said` answer tokens."""
    return Usage.of_parts(raw.get("fresh"), raw.get("reused"), 0, raw.get("said"))


def detect(body: Mapping[str, Any]) -> int:
    """5 for a body with Acme's `turns` and `preamble`, -1 otherwise."""
    return 5 if "turns" in body and "preamble" in body else -1


def count_tokens(text: str) -> int:
    """Acme's tokenizer: one token per word."""
    return len(text.split())
