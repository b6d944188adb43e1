"""Read-only views of the first `n` elements of a list that only ever grows.

A request's conversation grows by a step's messages while its history stays the same
objects, so each render's items and each canonical stream's pieces are the previous ones
plus a few. Copying them into a fresh tuple every step touches every earlier message (at
10,000 messages that was most of the render's and the stream's time). A `Prefix` is
instead a length over a list that is only ever appended to while views of it exist: the
view of an earlier step still reads what it read then. Whoever owns the list must never
change or remove an element a view can see; to go back (a rewrite), it starts a new list
(`Prefix.extended` does so whenever the view is not the list's end).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class Prefix(Sequence[T], Generic[T]):
    """The first `length` elements of `backing`, which only ever grows past them."""

    __slots__ = ("_backing", "_length")

    def __init__(self, backing: list[T], length: int | None = None) -> None:
        size = len(backing) if length is None else length
        if not 0 <= size <= len(backing):
            raise ValueError(f"a view of {size} elements of a list of {len(backing)}")
        self._backing = backing
        self._length = size

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step == 1:
                return tuple(self._backing[start:stop])
            return tuple(self._backing[i] for i in range(start, stop, step))
        position = index + self._length if index < 0 else index
        if not 0 <= position < self._length:
            raise IndexError("Prefix index out of range")
        return self._backing[position]

    def __iter__(self) -> Iterator[T]:
        return islice(self._backing, self._length)

    def __eq__(self, other: object) -> bool:
        """Equal to any tuple, list or view with the same elements in the same order."""
        if not isinstance(other, Prefix | tuple | list):
            return NotImplemented
        if len(other) != self._length:
            return False
        if isinstance(other, Prefix) and other._backing is self._backing:
            return True  # the same list's first n elements
        return all(a is b or a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # a view of a list, as a list is unhashable

    def __repr__(self) -> str:
        return f"Prefix({list(self)!r})"

    def to_list(self) -> list[T]:
        """A new list of the viewed elements (one copy)."""
        return self._backing[: self._length]

    def extended(self, items: Iterable[T]) -> Prefix[T]:
        """This view with `items` after it: the same list, appended to, when this view is
        its end; a new list otherwise (another view already grew it, or it is shared)."""
        new = list(items)
        if not new:
            return self
        if len(self._backing) == self._length:
            self._backing.extend(new)
            return Prefix(self._backing)
        return Prefix(self.to_list() + new)
