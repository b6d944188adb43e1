"""Where another thread is blocked, read from its frames: a test of a thread that must sleep
or wait on another (never spin, never run ahead) sees the state itself, not a timing."""

from __future__ import annotations

import gc
import sys
import threading
from types import FrameType

GIVE_UP = 60.0  # only a bound on a broken run: the state is reached as soon as it can be


def waiting_in(thread: threading.Thread, function: str) -> FrameType | None:
    """The frame of `threading`'s `function` (`wait`, `join`) that `thread` is inside, or
    None while it is not there (running, or never getting there)."""
    frame = _current_frames().get(thread.ident or 0)
    while frame is not None:
        code = frame.f_code
        if code.co_name == function and code.co_filename == threading.__file__:
            return frame
        frame = frame.f_back
    return None


def _current_frames() -> dict[int, FrameType]:
    """`sys._current_frames()` with the garbage collector off: on CPython 3.11 it holds the
    runtime's thread-list lock while it builds its dict, so a collection there can run a
    `__del__` (an SDK client closing its socket) that lets go of the GIL while a thread
    starting or ending waits on that lock holding it: both wait for ever
    (python/cpython#106883, seen hanging the proxy's keep-alive test under load)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return sys._current_frames()
    finally:
        if enabled:
            gc.enable()
