"""Faked time for keep-alive tests: the pinger's clock and sleep, moved only by the test."""

from __future__ import annotations

import asyncio

from warmloop.keepalive.pinger import KeepAlivePolicy


class FakeTime:
    """A clock that moves only when the test says; `sleep` returns once it has."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self.sleepers.append((self.now + seconds, future))
        await future

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for wake, future in list(self.sleepers):
            if wake <= self.now:
                self.sleepers.remove((wake, future))
                if not future.done():
                    future.set_result(None)

    def policy(self) -> KeepAlivePolicy:
        return KeepAlivePolicy(clock=self.clock, sleep=self.sleep)
