"""What a fleet task's step tries again, how often, and what it says each time.

Two things pass by themselves: a session a dead worker's lease still holds (it expires,
`sessions.lease.LEASE_SECONDS`) and a database blip (a restart, a failover, a dropped
connection: `outage.is_blip`). A step meeting either waits and goes on from what its
session stored, logging the cause in one line per try; anything else (a factory that
raises, a bug) ends the step at once, so the task fails with its error instead of being
tried for minutes. DBOS's own step retries stay off: they log a traceback per try and
retry every error alike.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from warmloop.errors import SessionBusy
from warmloop.fleet.outage import is_blip

LEASE_WAIT_SECONDS = 2.0
"""How often a recovered task tries again for a session a dead worker on another machine
still holds."""
LEASE_TRIES = 150
BLIP_WAITS = (1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0)
"""The waits after each database blip in a row: about a minute and a half in all, for a
restart or a failover; a database away longer fails the task, saying why."""

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
log = logging.getLogger("warmloop.fleet")


def _cause(exc: BaseException) -> str:
    """The innermost error's first line: what the database said."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


async def riding_out(
    step: Callable[[], Awaitable[T]], what: str, *, sleep: Sleep = asyncio.sleep
) -> T:
    """`step()`, tried again while its session is busy or the database blips (bounded)."""
    busy = blips = 0
    while True:
        try:
            return await step()
        except SessionBusy as exc:
            busy += 1
            if busy >= LEASE_TRIES:
                raise
            wait = LEASE_WAIT_SECONDS
            log.warning(
                "%s: %s; trying again in %.0f s (%d of %d)", what, exc, wait, busy, LEASE_TRIES
            )
        except Exception as exc:
            if not is_blip(exc) or blips >= len(BLIP_WAITS):
                raise
            wait = BLIP_WAITS[blips]
            blips += 1
            log.warning(
                "%s: the database is away (%s); trying again in %.0f s (%d of %d)",
                what,
                _cause(exc),
                wait,
                blips,
                len(BLIP_WAITS),
            )
        await sleep(wait)
