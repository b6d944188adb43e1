"""Store calls off the event loop: a run awaits each blocking store call (a transaction, a
lease, opening a store) in a worker thread, so one run's commit never stalls the other runs
on its loop (issue 17). The stores themselves stay synchronous: one contract for the loop
and for sync code (the CLI), each thread-safe (SQLite serialises one connection behind a
lock, PostgreSQL lends a pooled connection per call).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


async def off_loop(call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)` in the loop's default executor, with the caller's context.

    Cancelled meanwhile, it still waits for the call and returns its result, and the
    cancellation reaches the caller at its next await, just where it would have had the
    call blocked the loop: a write cannot be stopped halfway, and the caller must learn
    whether it landed before it changes what was being written."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    future = loop.run_in_executor(None, functools.partial(context.run, call, *args, **kwargs))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None or future.cancelled():  # the executor itself gave up on it
            raise
        while not future.done():
            try:
                await asyncio.wait({future})
            except asyncio.CancelledError:
                continue  # one more request to stop: delivered below with the first
        task.uncancel()  # handed on, not added: asyncio.timeout counts requests
        task.cancel()
        return future.result()
