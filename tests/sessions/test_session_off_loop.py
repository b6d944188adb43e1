"""A store call off the event loop (`off_loop`): a cancellation that arrives during the
call waits for it, then reaches the caller at its next await, as it would have had the call
blocked the loop (a write cannot be stopped halfway)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from warmloop.sessions.off_loop import off_loop


async def test_a_store_call_cancelled_midway_finishes_before_the_cancellation_lands() -> None:
    started, release = threading.Event(), threading.Event()

    def write() -> str:
        started.set()
        release.wait(10)
        return "stored"

    seen: list[str] = []

    async def caller() -> None:
        seen.append(await off_loop(write))  # the caller learns the write landed
        await asyncio.sleep(0)  # its next await takes the cancellation
        seen.append("went on")

    task = asyncio.create_task(caller())
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    await asyncio.sleep(0.01)
    try:
        assert not task.done()  # held by the write, which cannot be stopped halfway
    finally:
        release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["stored"]


async def test_a_timeout_during_a_store_call_is_still_a_timeout() -> None:
    async def slow_write_then_wait() -> None:
        async with asyncio.timeout(0.01):
            await off_loop(time.sleep, 0.05)  # the deadline passes during the call
            await asyncio.sleep(3600)

    with pytest.raises(TimeoutError):
        await slow_write_then_wait()
