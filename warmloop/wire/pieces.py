"""A request's prefix as pieces: the blocks a provider's cache counts (or the wire stream's
head sections and items), each with the cache marker the client sent on it. Two requests
share a prefix as far as their leading pieces match; the audit sizes pieces into simulator
blocks, and a format whose cache reads at markers reads its own pieces from a body
(`WireFormat.pieces`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from warmloop.wire.stream import CACHE_MARKERS, dumps, strip_keys


def common_pieces(a: Sequence[str], b: Sequence[str]) -> int:
    """How many leading pieces two requests share."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


@dataclass(frozen=True)
class Pieces:
    """A request's blocks before sizing: canonical text and the explicit marker's TTL."""

    texts: tuple[str, ...]
    marks: tuple[str | None, ...]

    def common(self, other: Pieces) -> int:
        """How many leading blocks the two requests share."""
        return common_pieces(self.texts, other.texts)


def marker_ttl(value: object) -> str | None:
    """The TTL of the `cache_control` marker a block carries (`5m` when it names none), or
    None when it carries none."""
    if not isinstance(value, Mapping):
        return None
    control = value.get("cache_control")
    if not isinstance(control, Mapping):
        return None
    ttl = control.get("ttl")
    return ttl if isinstance(ttl, str) else "5m"


def piece_text(value: object) -> str:
    """A block's canonical text: wire JSON without its cache markers."""
    return dumps(strip_keys(value, CACHE_MARKERS))
