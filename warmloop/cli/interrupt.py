"""Stopping a command from outside: SIGTERM (a service stop, `kill`) is handled as Ctrl-C
is, and the process exits with the code a shell reports for the signal."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as a KeyboardInterrupt: whatever Ctrl-C would close is closed (a
    run's step in progress, its transcript saved; the recorder's log)."""


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises `Terminated` in the main thread (restored after)."""

    def handler(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
