"""Store calls never run on the event loop's thread (issue 17): every call a run makes on
its session (the lease, loading, closing a cut step, each step's write, a rewrite, the
release) runs in a worker thread, on SQLite and on PostgreSQL; and a cancellation that
arrives during a store call waits for it, then reaches the run at its next await."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tests.support.stores import ThreadRecordingStore
from warmloop import Agent, ScriptedModel, call, tool
from warmloop.messages import AssistantTurn, SystemText, ToolCall, UserText
from warmloop.sessions.off_loop import off_loop
from warmloop.sessions.sql import SqlStore
from warmloop.transcript import Transcript


@tool
def dump(size: int) -> str:
    """Return `size` characters."""
    return "x" * size


def on_thread(store: ThreadRecordingStore, thread: int) -> list[str]:
    return [name for name, ident in store.calls if ident == thread]


async def test_a_run_with_a_session_makes_no_store_call_on_the_event_loops_thread(
    store: SqlStore,
) -> None:
    watched = ThreadRecordingStore(store)
    replies = [call("dump", size=3_000) for _ in range(4)] + [call("submit", answer="ok")]
    model = ScriptedModel(replies, context_window=4_000)  # small: maintenance rewrites
    agent = Agent(model, [dump], max_result_chars=None)
    run = await agent.run("task", session="s", store=watched)
    assert run.maintenance  # a rewrite was stored on the way
    assert {"acquire", "load", "append", "rewrite", "release"} <= {n for n, _ in watched.calls}
    assert on_thread(watched, threading.get_ident()) == []


async def test_closing_a_cut_step_and_a_cancelled_run_store_off_the_event_loop(
    store: SqlStore,
) -> None:
    lease = store.acquire("s")
    cut = Transcript([SystemText("Go."), UserText("Wait.")])
    cut.append(AssistantTurn(tool_calls=(ToolCall("call_1_0", "wait", "{}"),)))
    store.append(lease, cut)  # the process stopped during the tool
    store.release(lease)
    started = asyncio.Event()

    @tool
    async def wait() -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    watched = ThreadRecordingStore(store)
    task = asyncio.create_task(
        Agent(ScriptedModel([call("wait")]), [wait]).run("Wait.", session="s", store=watched)
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    names = [n for n, _ in watched.calls]
    assert names[:3] == ["acquire", "load", "append"]  # the cut step closed on opening
    assert names[-2:] == ["append", "release"]  # the cancelled step closed on the way out
    assert on_thread(watched, threading.get_ident()) == []


def test_run_sync_makes_no_store_call_on_its_event_loops_thread(store: SqlStore) -> None:
    watched = ThreadRecordingStore(store)
    model = ScriptedModel([call("dump", size=10), call("submit", answer="ok")])
    Agent(model, [dump]).run_sync("task", session="s", store=watched)
    assert {"acquire", "load", "append", "release"} <= {n for n, _ in watched.calls}
    assert on_thread(watched, threading.get_ident()) == []  # asyncio.run's loop: this thread


async def test_a_store_call_cancelled_midway_finishes_before_the_cancellation_lands() -> None:
    started, release = threading.Event(), threading.Event()

    def write() -> str:
        started.set()
        release.wait(10)
        return "stored"

    seen: list[str] = []

    async def caller() -> None:
        seen.append(await off_loop(write))  # the caller learns the write landed
        await asyncio.sleep(0)  # its next await takes the cancellation
        seen.append("went on")

    task = asyncio.create_task(caller())
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    await asyncio.sleep(0.01)
    try:
        assert not task.done()  # held by the write, which cannot be stopped halfway
    finally:
        release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["stored"]


async def test_a_timeout_during_a_store_call_is_still_a_timeout() -> None:
    async def slow_write_then_wait() -> None:
        async with asyncio.timeout(0.01):
            await off_loop(time.sleep, 0.05)  # the deadline passes during the call
            await asyncio.sleep(3600)

    with pytest.raises(TimeoutError):
        await slow_write_then_wait()
