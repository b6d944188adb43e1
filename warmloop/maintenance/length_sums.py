"""Sums of values kept by length, for "the total of every entry at least this long".

A Fenwick tree over lengths, stored sparsely (a length may be millions of characters): each
`add` and `at_least` touches about log2 of the longest length's keys, however many entries
there are, so a prune's candidates are priced without reading them one by one.
"""

from __future__ import annotations


class LengthSums:
    """Entries keyed by a length (>= 0), each carrying two values; the sums of both over
    the entries whose length is at least a given one."""

    def __init__(self) -> None:
        self._size = 1
        """A power of two above every length added (the tree's range is 1..size)."""
        self._first: dict[int, int] = {}
        self._second: dict[int, int] = {}
        self._totals = (0, 0)

    def add(self, length: int, first: int, second: int, sign: int = 1) -> None:
        """Add (`sign` 1) or remove (`sign` -1) an entry of `length`."""
        while length + 1 > self._size:
            # The doubled tree's new nodes cover only lengths beyond the old range (empty),
            # except its root, which covers everything.
            self._size *= 2
            self._first[self._size], self._second[self._size] = self._totals
        one, two = self._first, self._second
        first, second = sign * first, sign * second
        i = length + 1
        while i <= self._size:
            one[i] = one.get(i, 0) + first
            two[i] = two.get(i, 0) + second
            i += i & -i
        total_one, total_two = self._totals
        self._totals = (total_one + first, total_two + second)

    def at_least(self, length: int) -> tuple[int, int]:
        """The sums of both values over the entries of `length` or longer."""
        below_one = below_two = 0
        i = min(length, self._size)  # the entries shorter than `length`: keys 1..length
        one, two = self._first, self._second
        while i > 0:
            below_one += one.get(i, 0)
            below_two += two.get(i, 0)
            i -= i & -i
        total_one, total_two = self._totals
        return total_one - below_one, total_two - below_two
