"""A loopback test server served from a thread, and stopped without waiting out a poll.

`socketserver`'s `serve_forever` looks at its stop flag once per poll interval (half a
second by default), so every `shutdown()` of a test's server waited up to that long: about
a hundred seconds of the default run went idle in teardowns. A short interval costs a few
wake-ups a second while a server is up, and nothing of what it serves changes."""

from __future__ import annotations

import socketserver
import threading

POLL_SECONDS = 0.01


def serve_in_thread(server: socketserver.BaseServer) -> threading.Thread:
    """Start `server` on a daemon thread (joined after `server.shutdown()`); returns it."""
    thread = threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)
    thread.start()
    return thread
