"""SDK clients per event loop: one model serves every thread, event loop and test at once.

An SDK client (openai's AsyncOpenAI, anthropic's AsyncAnthropic, google-genai's Client)
pools its HTTP connections, and a pooled connection, like the pool's own lock, belongs to
the event loop that opened it: used from another loop it fails (`... is bound to a
different event loop`, `Event loop is closed`, or an error that reads as a connection that
cannot be made). A service uses one model from many loops: concurrent runs on one loop,
`run_sync` from worker threads (each its own loop, `thread_loop`), `asyncio.run` per call,
a loop per test, an ASGI server's thread pool. So a model holds one client per running
loop (`LoopClients`): made on the loop's first request, shared by every request on that
loop (its connections reused), closed when the loop shuts down.

The hook is the loop's own shutdown of its async generators, which `asyncio.run`,
`asyncio.Runner` (so `run_sync`'s thread loops), pytest-asyncio and uvicorn all await
before they close a loop: each client is held by an async generator of its loop whose
`finally` closes it. A loop closed without that shutdown is found closed by the next
request on any loop, and its client dropped: its sockets close when it is collected.
google-genai (3.x) keeps a pool per loop inside its client the same way, though closed
only with the client; pydantic-ai leaves a provider's pooled connections on the loop that
opened them (its PR #6850), so an agent is made again for each loop.

A client the caller passed (`client=`) is theirs: used as given on every loop, never
copied (its transport, proxies and hooks are theirs) and never closed. A function passed
instead is called once per loop, and what it makes is closed with its loop, as warmloop's
own clients are.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

C = TypeVar("C")

Close = Callable[[C], Awaitable[object]]
"""How a client is closed (`AsyncOpenAI.close`, `genai.Client.aio.aclose`)."""


@dataclass
class _Held(Generic[C]):
    """A loop's client, and the async generator of that loop that closes it."""

    client: C
    keeper: AsyncGenerator[None, None]


class LoopClients(Generic[C]):
    """The client each running event loop sends with (see the module docstring).

    `client` is the one made first: the settings every loop's client shares (its key, base
    URL, retries), and the client of the first loop that sends."""

    def __init__(self, make: Callable[[], C] | None, close: Close[C], client: C) -> None:
        self._make = make
        self._close = close
        self.client = client
        self._spare: C | None = client if make is not None else None
        self._held: dict[asyncio.AbstractEventLoop, _Held[C]] = {}
        self._lock = threading.Lock()  # run_sync's threads ask at once, each for its loop

    @classmethod
    def made(cls, make: Callable[[], C], close: Close[C]) -> LoopClients[C]:
        """One client per loop, each from `make` (called once now: its settings are read,
        and a bad one fails here), each closed with its loop."""
        return cls(make, close, make())

    @classmethod
    def given(cls, client: C) -> LoopClients[C]:
        """The caller's own client, on every loop as it is; never closed here."""
        return cls(None, _leave_open, client)

    @property
    def loops(self) -> int:
        """How many loops hold a client made for them (a loop closed by hand counts until
        the next request forgets it)."""
        with self._lock:
            return len(self._held)

    async def current(self) -> C:
        """The running loop's client, made on its first request."""
        if self._make is None:
            return self.client
        loop = asyncio.get_running_loop()
        with self._lock:
            held = self._held.get(loop)
            if held is not None:
                return held.client
            spare, self._spare = self._spare, None
        # Made outside the lock (tens of milliseconds of TLS setup): no other request of
        # this loop can come in between, as nothing here awaits.
        client = self._make() if spare is None else spare
        with self._lock:
            self._drop_closed()
            held = self._held[loop] = _Held(client, self._keep(loop, client))
        # Its first step registers the generator with the loop (the loop's `firstiter`
        # hook): the loop's shutdown of its async generators now closes this client.
        await anext(held.keeper)
        return client

    async def _keep(self, loop: asyncio.AbstractEventLoop, client: C) -> AsyncGenerator[None, None]:
        """Wait for the loop's shutdown, then forget and close its client."""
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(loop, None)
            await self._close(client)

    def _drop_closed(self) -> None:
        """Forget the clients of loops closed without shutting their generators down (a
        loop closed by hand): none of their connections can ever be used again."""
        for loop in [loop for loop in self._held if loop.is_closed()]:
            del self._held[loop]


def given_clients(
    given: C | Callable[[], C], close: Close[C], adjust: Callable[[C], C] | None = None
) -> LoopClients[C]:
    """What a caller passed as `client=`, as a model's clients: a client, that one on every
    loop; a function, called once per loop, what it makes closed with its loop. `adjust`
    applies the settings the caller gave beside it (a base URL, a timeout)."""
    fix = adjust or _as_it_is
    if callable(given):
        return LoopClients.made(lambda: fix(given()), close)
    return LoopClients.given(fix(given))


def _as_it_is(client: C) -> C:
    return client


async def _leave_open(client: object) -> None:
    """A caller's client is closed by the caller."""
