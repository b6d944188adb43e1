"""What a fleet task's step tries again, how long, and what it says each time: by cause.

- A session another holder's lease still holds (a dead worker on another machine): waited
  for, every LEASE_WAIT_SECONDS, for at most one lease period and a try more; a lease is
  renewed while its run lives, so one held longer than that belongs to a live run, and the
  task fails saying so.
- A database blip (a restart, a failover, a dropped connection: `outage.is_blip`): waited
  out for about a minute and a half (BLIP_WAITS).
- The provider's rate limit (`RateLimited`) or outage (`ProviderUnavailable`) after its
  SDK's retries: waited out by the server's hint (`limited.asked_wait`), bounded by
  `limited.MAX_WAIT_SECONDS` a wait and PROVIDER_TRIES in all.
Each try logs one line, never a traceback; the run goes on from what its session stored.
Anything else (a factory that raises, a bug, a tool's surprise) ends the step at once, so
the task fails once with its error. DBOS's own step retries stay off: they log a
traceback per try and retry every error alike.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

from warmloop.errors import ProviderUnavailable, RateLimited, SessionBusy
from warmloop.fleet.limited import MAX_WAIT_SECONDS, asked_wait
from warmloop.fleet.outage import is_blip
from warmloop.sessions.lease import LEASE_SECONDS

LEASE_WAIT_SECONDS = 2.0
"""How often a task tries again for a session another holder's lease still holds."""
BLIP_WAITS = (1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0)
"""The waits after each database blip in a row: about a minute and a half in all, for a
restart or a failover; a database away longer fails the task, saying why."""
PROVIDER_TRIES = 4
"""Provider rate limits or outages in a row a step waits out before the task fails."""
OUTAGE_WAIT_SECONDS = 30.0
"""The wait after a provider outage (the SDK already retried with its own short waits)."""

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
log = logging.getLogger("warmloop.fleet")


def _cause(exc: BaseException) -> str:
    """The innermost error's first line: what the database said."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def provider_wait(exc: BaseException) -> float | None:
    """The wait a provider's rate limit or outage in `exc`'s causes asks for (None when it
    holds neither); a run that met one stopped with it as its cause."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, RateLimited):
            return asked_wait(found.retry_after)
        if isinstance(found, ProviderUnavailable):
            return OUTAGE_WAIT_SECONDS
        seen.add(id(found))
        found = found.__cause__
    return None


def lease_tries(lease_seconds: float) -> int:
    """Tries for a busy session: one lease period of waits, and one more."""
    return math.ceil(lease_seconds / LEASE_WAIT_SECONDS) + 1


async def riding_out(
    step: Callable[[], Awaitable[T]],
    what: str,
    *,
    sleep: Sleep = asyncio.sleep,
    lease_seconds: float = LEASE_SECONDS,
) -> T:
    """`step()`, tried again (bounded) while its session is busy, the database blips or
    the provider rate-limits or is down; anything else is raised at once."""
    busy = blips = provider = 0
    most_busy = lease_tries(lease_seconds)
    while True:
        try:
            return await step()
        except SessionBusy as exc:
            busy += 1
            if busy >= most_busy:
                raise
            wait = LEASE_WAIT_SECONDS
            log.warning(
                "%s: %s; trying again in %.0f s (%d of %d)", what, exc, wait, busy, most_busy
            )
        except Exception as exc:
            asked = provider_wait(exc)
            if asked is not None:
                provider += 1
                if provider >= PROVIDER_TRIES or asked > MAX_WAIT_SECONDS:
                    raise
                wait = asked
                log.warning(
                    "%s: the provider is rate-limited or down (%s); trying again in %.0f s "
                    "(%d of %d)",
                    what,
                    _cause(exc),
                    wait,
                    provider,
                    PROVIDER_TRIES,
                )
            elif is_blip(exc) and blips < len(BLIP_WAITS):
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
            else:
                raise
        await sleep(wait)
