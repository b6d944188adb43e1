"""`agent.iter`: a run consumed as its events, in order, and the finished `Run` at the end.

The run goes on in a task of its own; each event it reports is queued for the reader, so a
slow reader never holds up a request. Leaving the `async with` block cancels a run still
going (its transcript kept, as Ctrl-C keeps it); a run that failed raises its `RunError`
where the reader would have had the next event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from types import TracebackType

from warmloop.agent.events import Event
from warmloop.agent.result import Run
from warmloop.errors import ConfigurationError

Listener = Callable[[Event], None]


class EventStream:
    """A run's events: `async with agent.iter(task) as events: async for event in
    events: ...`, then `events.run`."""

    def __init__(self, start: Callable[[Listener], Awaitable[Run]]) -> None:
        self._start = start
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task[Run] | None = None

    async def __aenter__(self) -> EventStream:
        self._started()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> EventStream:
        self._started()
        return self

    async def __anext__(self) -> Event:
        task = self._started()
        event = await self._queue.get()
        if event is not None:
            return event
        self._queue.put_nowait(None)  # every later read ends here as well
        if not task.cancelled() and (failure := task.exception()) is not None:
            raise failure
        raise StopAsyncIteration

    @property
    def run(self) -> Run:
        """The finished run (once its events are read to the end)."""
        task = self._task
        if task is None or not task.done() or task.cancelled():
            raise ConfigurationError(
                "the run has not finished: read its events to the end "
                "(async for event in events) before asking for events.run"
            )
        return task.result()

    async def aclose(self) -> None:
        """Cancel the run if it is still going, and wait until it has stopped."""
        task = self._task
        if task is None:
            return
        if task.done():
            if not task.cancelled():
                task.exception()  # read (raised to a reader, or left unread on purpose)
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def _started(self) -> asyncio.Task[Run]:
        if self._task is None:
            self._task = asyncio.create_task(self._running())
        return self._task

    async def _running(self) -> Run:
        try:
            return await self._start(self._queue.put_nowait)
        finally:
            self._queue.put_nowait(None)
