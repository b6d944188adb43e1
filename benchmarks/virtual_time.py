"""Virtual time for benchmarks of agents that wait minutes: an asyncio event loop whose clock
jumps, when nothing is ready, straight to the next timer (`asyncio.sleep`, timeouts, the
keep-alive's sleep), so an eight-minute tool takes no real time and every run is exact.

The loop is asyncio's own `SelectorEventLoop` with two public seams: its `time()` is the
virtual clock, and its selector, asked to wait `timeout` seconds for I/O, polls without
waiting and moves the clock by `timeout` instead. Code run on it must do no real I/O that
it awaits and no work in threads (the benchmarks' models and tools are in memory and
async): a thread's result would arrive after the clock had already jumped.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class VirtualSelector(selectors.BaseSelector):
    """A real selector that never waits: a wait moves the loop's virtual clock instead."""

    def __init__(self, loop: VirtualLoop) -> None:
        self.real = selectors.DefaultSelector()
        self.loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self.real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self.real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise RuntimeError("virtual time: everything waits and no timer is due (a deadlock)")
        self.loop.now += timeout
        return ready

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self.real.get_map()

    def close(self) -> None:
        self.real.close()


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on virtual time (see the module docstring); `now` starts at 0."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(VirtualSelector(self))

    def time(self) -> float:
        return self.now


def run_virtual(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` to its end on a fresh virtual-time loop."""
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(main)
    finally:
        loop.close()
