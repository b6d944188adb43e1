"""An index of requests by the leading text of their conversation part: which earlier
requests a new one could continue, without comparing it with every conversation.

Each request is filed under hashes of its conversation part's first characters at a ladder
of depths (16, 23, 32, 45, ..., each about 1.41 times the last) and under the empty prefix.
A new request looks its own ladder up from the deepest rung: the requests filed there share
at least that many leading characters with it, so they are the ones it most likely
continues. Each rung keeps only its latest `PER_ANCHOR` requests, so a lookup costs one
hash per rung and the index holds O(requests x log length) small integers, whatever the
number of conversations. A hash collision only adds a candidate: the caller measures each
one exactly (`continuation`).

`loose_anchors` cuts the same rungs from the text with every run of digits read as one
`#`: a loop that writes its iteration number or the time first still finds the request
before it on the deep rungs (the measure reads past such values too). They are asked only
after the exact ones: many conversations from one template share every loose rung.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

FIRST = 16
RATIO = 2**0.5
PER_ANCHOR = 8
"""Requests kept per rung: the latest, so a conversation's newest requests are found."""
CANDIDATES = 8
"""How many distinct requests a lookup returns at most."""


def _ladder(limit: int = 1 << 40) -> tuple[int, ...]:
    depths: list[int] = []
    depth = float(FIRST)
    while depth < limit:
        if not depths or int(depth) > depths[-1]:
            depths.append(int(depth))
        depth *= RATIO
    return tuple(depths)


DEPTHS = _ladder()
DIGITS = re.compile(r"[0-9]+")


def anchors(scope: Hashable, text: str) -> list[int]:
    """The rungs of `text` (shallowest first) within `scope` (format and routing key):
    requests of different scopes never meet."""
    found = [hash((scope, 0, ""))]
    for depth in DEPTHS:
        if depth > len(text):
            break
        found.append(hash((scope, depth, text[:depth])))
    return found


def loose_anchors(scope: Hashable, text: str) -> list[int]:
    """The rungs of `text` with its digit runs read as `#` (in a domain of their own)."""
    return anchors(("loose", scope), DIGITS.sub("#", text))


class AnchorIndex:
    """Requests (by number) filed under their rungs."""

    def __init__(self) -> None:
        self._rungs: dict[int, int | list[int]] = {}

    def candidates(self, rungs: Sequence[int]) -> list[int]:
        """Requests sharing the deepest rungs with `rungs`, deepest and latest first."""
        found: list[int] = []
        for rung in reversed(rungs):
            filed = self._rungs.get(rung)
            if filed is None:
                continue
            for number in reversed(filed) if isinstance(filed, list) else (filed,):
                if number not in found:
                    found.append(number)
            if len(found) >= CANDIDATES:
                break
        return found[:CANDIDATES]

    def add(self, rungs: Sequence[int], number: int) -> None:
        """File request `number` under `rungs`."""
        table = self._rungs
        for rung in rungs:
            filed = table.get(rung)
            if filed is None:
                table[rung] = number  # most rungs hold one request: no list for them
            elif isinstance(filed, int):
                table[rung] = [filed, number]
            else:
                filed.append(number)
                if len(filed) > PER_ANCHOR:
                    del filed[0]
