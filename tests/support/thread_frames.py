"""Where another thread is blocked, read from its frames: a test of a thread that must sleep
or wait on another (never spin, never run ahead) sees the state itself, not a timing."""

from __future__ import annotations

import sys
import threading
from types import FrameType

GIVE_UP = 60.0  # only a bound on a broken run: the state is reached as soon as it can be


def waiting_in(thread: threading.Thread, function: str) -> FrameType | None:
    """The frame of `threading`'s `function` (`wait`, `join`) that `thread` is inside, or
    None while it is not there (running, or never getting there)."""
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        code = frame.f_code
        if code.co_name == function and code.co_filename == threading.__file__:
            return frame
        frame = frame.f_back
    return None
