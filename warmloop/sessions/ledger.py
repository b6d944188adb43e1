"""What a store keeps beside the live messages: archived originals, rewrite points and the
usage of every model request. Positions are where the message stands now (a fold shifts
the rows after it, and their records with them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from warmloop.facts.usage import Usage
from warmloop.messages import Message

RewriteKind = Literal["replace", "fold"]


@dataclass(frozen=True)
class ArchivedMessage:
    """An original a rewrite replaced: the `revision` that replaced it and its position."""

    revision: int
    position: int
    message: Message
    archived_at: float


@dataclass(frozen=True)
class RewritePoint:
    """One rewrite as stored: its revision and kind, the span it touched (`[start, end)`;
    a fold's summary stands at `end`), how many originals it archived, when, and the
    session's message count right after it."""

    revision: int
    kind: RewriteKind
    start: int
    end: int
    replaced: int
    at: float
    length: int


@dataclass(frozen=True)
class StoredRequest:
    """One model request: the position of the assistant turn it produced, when it was sent,
    its wall-clock seconds and its normalised usage."""

    position: int
    sent_at: float
    seconds: float
    usage: Usage
