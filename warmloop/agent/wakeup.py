"""Signals wake the event loop whichever thread the kernel hands them to.

Python runs signal handlers in the main thread only, when it next runs bytecode. A signal
sent to the process (Ctrl-C, `kill`) may be delivered to any of its threads; when it lands
on another one (a tool's worker, the executor's) while the main thread sleeps in the event
loop's selector waiting for a reply that never comes, nothing wakes the main thread: Ctrl-C
and SIGTERM were lost until the request's own timeout. A wakeup file descriptor
(`signal.set_wakeup_fd`), watched by the loop, fixes that: the C-level handler writes a
byte to it from any thread, the selector returns, and the main thread runs the handlers
(asyncio's Ctrl-C handler, the CLI's SIGTERM one) as it would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def signals_wake_the_loop(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """While inside, any signal wakes `loop` (run in the main thread); elsewhere, or where
    a wakeup descriptor cannot be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        reader.close()
        writer.close()
        yield
        return

    def drain() -> None:
        with contextlib.suppress(OSError):
            while reader.recv(4096):
                pass

    loop.add_reader(reader.fileno(), drain)
    try:
        yield
    finally:
        loop.remove_reader(reader.fileno())
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
