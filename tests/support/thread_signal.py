"""Run as a script: a run whose model never answers (no timer pending either), interrupted
by a SIGINT the kernel hands to another thread than the main one. Prints `interrupted`
when the run ends on KeyboardInterrupt; without a wakeup for the loop it waits forever."""

from __future__ import annotations

import asyncio
import signal
import threading

from warmloop import Agent, ScriptedModel
from warmloop.providers.base import ModelResponse, Rendered

asking = threading.Event()


class Unanswered(ScriptedModel):
    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        asking.set()
        await asyncio.get_running_loop().create_future()  # never done
        raise AssertionError("unreachable")


def interrupt_from_this_thread() -> None:
    asking.wait()
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)


if __name__ == "__main__":
    # Ctrl-C live, as in a terminal: a suite run as a background job hands this process
    # SIGINT ignored, and Python then installs no handler at all.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_from_this_thread, daemon=True).start()
    try:
        Agent(Unanswered([]), []).run_sync("Wait.")
    except KeyboardInterrupt:
        print("interrupted")
