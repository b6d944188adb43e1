"""One event loop per thread for the sync entry point (`Agent.run_sync`).

An SDK client (AsyncOpenAI's, AsyncAnthropic's, google-genai's) pools its HTTP connections,
and a pooled connection belongs to the event loop that opened it, so a model keeps one
client per loop, closed when the loop shuts down (`providers.loop_clients`). A loop per
call would make a new client and new connections (a TLS handshake) for every call. As
pydantic-ai's `run_sync` and the OpenAI Agents SDK's `Runner.run_sync` do, a thread's sync
calls share one loop, so they share its client and connections: an `asyncio.Runner`,
which turns Ctrl-C into the call's cancellation as `asyncio.run` does. What a call leaves
running is cancelled before it returns (as `asyncio.run` would); the loop is closed (its
clients with it) when its thread ends, or at exit for the main thread. The thread's
current event loop (`asyncio.set_event_loop`) is left alone.

A process forked from one that ran a sync call inherits that loop, whose selector and
self-pipe are its parent's: a child never runs or closes it (it waited forever on the
parent's epoll), and makes its own on first use.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import threading
from collections.abc import Coroutine
from typing import TypeVar

T = TypeVar("T")


class ThreadLoop:
    """One thread's event loop for its sync calls, closed when the thread lets it go."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.runner = asyncio.Runner(loop_factory=asyncio.new_event_loop)
        self.loop = self.runner.get_loop()

    def run(self, coroutine: Coroutine[object, None, T]) -> T:
        """Run `coroutine` to its end on this loop, then cancel what it left running."""
        try:
            return self.runner.run(coroutine)
        finally:
            self._cancel_leftovers()

    def _cancel_leftovers(self) -> None:
        loop = self.loop
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))

    @property
    def closed(self) -> bool:
        """Whether this loop was closed (its thread ended, or the process is exiting)."""
        return self.loop.is_closed()

    def close(self) -> None:
        """Close the loop (cancelling what is left, shutting its executor down); never one
        inherited across a fork, which is the parent's."""
        if self.pid != os.getpid():
            return
        # From a thread already running another loop the shutdown cannot run; the
        # runner still closes its loop.
        with contextlib.suppress(RuntimeError):
            self.runner.close()

    def __del__(self) -> None:  # the thread ended: its locals are dropped
        self.close()


_local = threading.local()


def thread_loop() -> ThreadLoop:
    """This thread's loop for sync calls, made on first use."""
    found: ThreadLoop | None = getattr(_local, "loop", None)
    if found is None or found.pid != os.getpid():  # none yet, or the parent's (a fork)
        found = _local.loop = ThreadLoop()
        if threading.current_thread() is threading.main_thread():
            atexit.register(found.close)
    return found


def run_in_thread_loop(coroutine: Coroutine[object, None, T]) -> T:
    """Run `coroutine` on this thread's loop for sync calls (see the module docstring)."""
    return thread_loop().run(coroutine)
