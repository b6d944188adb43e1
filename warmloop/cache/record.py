"""What one model request left behind: its usage, its wall-clock seconds, and whether it
extended the request before it (the prefix guard's check). A run keeps one per request, a
session stores them, the CLI shows them."""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.cache.guard import PrefixCheck
from warmloop.cache.usage import Usage


@dataclass(frozen=True)
class RequestRecord:
    """One model request: its usage, wall-clock seconds and prefix check."""

    usage: Usage
    seconds: float
    prefix: PrefixCheck
