"""Two sync runs in one process, against a server that keeps its connections alive (issue
30): the second run used to crash on every OpenAI-SDK provider with `Event loop is closed`,
its model's pooled connection belonging to the first run's closed event loop."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import threading
from pathlib import Path

import pytest

from tests.support.fake_servers import ToolUse
from tests.support.wire_servers import PROVIDERS, WireServer, connect, scripted
from warmloop import Agent, Run, ScriptedModel, call
from warmloop.agent.thread_loop import thread_loop

HANG_GUARD = 600.0
"""Seconds a forked child may take: only a bound on a hang, never a measure."""


def submit(text: str) -> ToolUse:
    return ToolUse("submit", {"answer": text})


def answer(run: Run) -> str:
    return str(run.outputs.model_dump()["answer"])


@pytest.mark.parametrize("prefix", PROVIDERS)
def test_two_sync_runs_share_the_models_kept_alive_connection(
    wire_server: WireServer, prefix: str
) -> None:
    wire_server.serve(scripted([submit("first"), submit("second")]))
    agent = Agent(connect(wire_server, prefix))
    first = agent.run_sync("the first task")
    opened = wire_server.connections
    second = agent.run_sync("the second task")
    assert (first.outputs.model_dump()["answer"], second.outputs.model_dump()["answer"]) == (
        "first",
        "second",
    )
    assert len(wire_server.requests()) == 2
    assert wire_server.connections == opened  # the second run reused the first's connection


@pytest.mark.parametrize("prefix", ["openai", "anthropic"])
def test_a_threads_sync_runs_share_its_own_loop_closed_when_the_thread_ends(
    wire_server: WireServer, prefix: str
) -> None:
    wire_server.serve(scripted([submit("first"), submit("second")]))
    agent = Agent(connect(wire_server, prefix))
    answers: list[str] = []
    loops: list[asyncio.AbstractEventLoop] = []

    def twice() -> None:
        answers.extend(
            agent.run_sync(task).outputs.model_dump()["answer"] for task in ("one", "two")
        )
        loops.append(thread_loop().loop)

    worker = threading.Thread(target=twice)
    worker.start()
    worker.join()
    gc.collect()
    assert answers == ["first", "second"]
    assert loops[0] is not thread_loop().loop  # one loop per thread
    assert loops[0].is_closed()  # not leaked: closed with its thread


def _sync_run_in_child(store: str, answers: multiprocessing.SimpleQueue[str]) -> None:
    agent = Agent(ScriptedModel([call("submit", answer="child")]))
    run = agent.run_sync("Answer.", session="child", store=store)
    answers.put(str(run.outputs.model_dump()["answer"]))


def test_a_process_forked_after_a_sync_run_runs_its_own(tmp_path: Path) -> None:
    """A forked child inherits its parent's thread loop (selector and self-pipe included):
    it must make its own: the inherited loop's executor has no threads in the child, so the
    session store's first call off the loop waited forever (a crash-test worker forked from
    a process that had run an agent on a stored session hung there)."""
    store = str(tmp_path / "sessions.db")
    parent = Agent(ScriptedModel([call("submit", answer="parent")]))
    run = parent.run_sync("Answer.", session="parent", store=store)
    assert run.outputs.model_dump()["answer"] == "parent"
    context = multiprocessing.get_context("fork")
    answers: multiprocessing.SimpleQueue[str] = context.SimpleQueue()
    child = context.Process(target=_sync_run_in_child, args=(store, answers))
    child.start()
    child.join(HANG_GUARD)
    alive = child.is_alive()
    if alive:
        child.kill()
        child.join()
    assert not alive, "the forked child hung on its parent's event loop"
    assert child.exitcode == 0
    assert answers.get() == "child"
    assert not thread_loop().closed  # the parent's loop is its own still
