"""The lease a worker holds while it appends to a session.

A lease is a random token with an expiry, stored on the session row. Every write checks the
token (a fencing compare-and-swap together with the stored length and revision), so a
worker whose lease lapsed and was taken over can never write again; the expiry lets a
session left by a killed worker be taken over. A holder on this host whose process is gone
(checked by pid and process start time) is stale at once, so a local crash needs no wait;
one whose process still runs is never taken over, expired or not. While a run holds a
session, a heartbeat renews the lease (`Heartbeat`), so a tool or model call longer than
the lease does not let another worker take the session and drop the call's result.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LEASE_SECONDS = 120.0
"""How long a lease lives after its last write; every stored step renews it."""

_PROC = Path("/proc")
BEATS_PER_LEASE = 4
"""A live holder renews its lease this many times per lease length."""
logger = logging.getLogger("warmloop.sessions")


@dataclass
class Lease:
    """A held lease and what the holder knows is stored (`length` messages at `revision`,
    `requests` request records). The store updates it after each committed write."""

    session_id: str
    token: str
    holder: str
    expires_at: float
    length: int
    revision: int
    requests: int
    seconds: float = LEASE_SECONDS
    """How long the lease lives after a write or a heartbeat."""


def new_token() -> str:
    """A fresh random lease token."""
    return secrets.token_hex(16)


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks, or None when it is gone or a zombie."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def holder_name() -> str:
    """Who is asking: `host:pid:start` (the start time tells a reused pid apart)."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or ''}"


def holder_gone(holder: str) -> bool:
    """True when `holder` ran on this host and its process no longer runs; a holder on
    another host is never judged gone here (only its lease's expiry frees the session)."""
    parts = holder.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid, start = int(parts[1]), parts[2]
    if _PROC.is_dir():
        now = _start_time(pid)
        return now is None or (bool(start) and now != start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def holder_alive_here(holder: str) -> bool:
    """True when `holder` is another process on this host that still runs: its session is
    never taken over, even once its lease has expired (it may be inside a long call)."""
    parts = holder.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    return int(parts[1]) != os.getpid() and not holder_gone(holder)


def heartbeat_seconds(lease: Lease) -> float:
    """Wall seconds between two renewals of `lease`."""
    return lease.seconds / BEATS_PER_LEASE


class Heartbeat:
    """Renews a held lease from a daemon thread, from `start` to `stop`: the holder is alive
    and working (a tool or model call may outlast the lease). A lost lease stops it; the
    holder's next write then fails with SessionBusy, as it would have."""

    def __init__(self, renew: Callable[[Lease], None], lease: Lease) -> None:
        self._renew = renew
        self._lease = lease
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"warmloop-lease-{lease.session_id}", daemon=True
        )

    def start(self) -> None:
        """Renew every `heartbeat_seconds` from now on."""
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing; waits for a renewal in progress (a transaction), so call it off
        the event loop."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(heartbeat_seconds(self._lease)):
            try:
                self._renew(self._lease)
            except Exception as exc:  # lost, or the store is down: the next write says so
                logger.warning(
                    "session %s: the lease could not be renewed (%s)", self._lease.session_id, exc
                )
                return
