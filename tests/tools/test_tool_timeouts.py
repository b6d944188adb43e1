"""Hung tools: every tool has a time limit, a timeout is a tool error the model sees, and a
worker that cannot be stopped is reported instead of leaked silently."""

from __future__ import annotations

import asyncio
import logging
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from warmloop import Agent, ConfigurationError, ScriptedModel, Tool, Toolbox, call, tool
from warmloop.messages import ToolCall, ToolResult
from warmloop.tools.invoke import DEFAULT_TOOL_TIMEOUT

SAFETY_SECONDS = 30  # frees a hung tool even if the code under test never times it out


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event hung tools wait on; set at the end (or by a safety timer) so no test hangs."""
    event = threading.Event()
    safety = threading.Timer(SAFETY_SECONDS, event.set)
    safety.daemon = True
    safety.start()
    yield event
    event.set()
    safety.cancel()


def hanging_tool(release: threading.Event, *, timeout: float | None) -> Tool:
    def hang() -> str:
        """Waits until released."""
        release.wait()
        return "released"

    return Tool.from_function(hang, timeout=timeout)


async def test_a_hung_sync_tool_times_out_and_its_thread_is_reported(
    release: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    toolbox = Toolbox([hanging_tool(release, timeout=0.05)])
    with caplog.at_level(logging.WARNING, logger="warmloop"):
        execution = await toolbox.run(ToolCall("c1", "hang", "{}"))
    assert execution.result.is_error
    assert execution.result.content.startswith("hang timed out after 0.05 s")
    assert execution.timed_out
    assert execution.stuck
    [stuck] = toolbox.stuck
    assert stuck.call == ToolCall("c1", "hang", "{}")
    assert "hang" in caplog.text
    assert "still running" in caplog.text
    release.set()
    assert isinstance(stuck.worker, threading.Thread)
    stuck.worker.join()
    assert toolbox.stuck == ()


async def test_the_toolbox_timeout_applies_to_tools_without_their_own(
    release: threading.Event,
) -> None:
    toolbox = Toolbox([hanging_tool(release, timeout=None)], timeout=0.05)
    result = await toolbox.execute(ToolCall("c1", "hang", "{}"))
    assert result.is_error
    assert "timed out after 0.05 s" in result.content


def test_every_toolbox_has_a_finite_default_timeout() -> None:
    assert Toolbox().timeout == DEFAULT_TOOL_TIMEOUT
    assert 0 < DEFAULT_TOOL_TIMEOUT < math.inf


async def test_a_tool_may_opt_out_of_the_time_limit(release: threading.Event) -> None:
    @tool(timeout=math.inf)
    def slow() -> str:
        """Finishes once released."""
        release.wait()
        return "done"

    toolbox = Toolbox([slow], timeout=0.01)
    threading.Timer(0.2, release.set).start()
    assert (await toolbox.execute(ToolCall("c1", "slow", "{}"))).content == "done"


@pytest.mark.parametrize("bad", [0, -1, math.nan, True, "5"])
def test_a_timeout_must_be_a_positive_number(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="timeout"):
        Toolbox(timeout=bad)
    with pytest.raises(ConfigurationError, match="timeout"):
        tool(timeout=bad)(lambda: "x")

    def quick() -> str:
        """Returns at once."""
        return "x"

    with pytest.raises(ConfigurationError, match="timeout"):
        Tool.from_function(quick, timeout=bad)


async def test_sync_tools_run_in_daemon_threads_so_a_hung_one_never_blocks_exit() -> None:
    @tool
    def where() -> str:
        """Says whether it runs in a daemon thread."""
        return f"daemon={threading.current_thread().daemon}"

    assert (await Toolbox([where]).execute(ToolCall("c1", "where", "{}"))).content == (
        "daemon=True"
    )


HUNG_PROGRAM = """
import asyncio, threading
from warmloop import Toolbox, tool
from warmloop.messages import ToolCall

@tool(timeout=0.1)
def hang() -> str:
    \"\"\"Hangs for good.\"\"\"
    threading.Event().wait()
    return "never"

toolbox = Toolbox([hang])
result = asyncio.run(toolbox.execute(ToolCall("c1", "hang", "{}")))
print(result.is_error, [s.call.name for s in toolbox.stuck])
"""


def test_a_program_whose_tool_hangs_for_good_still_exits() -> None:
    """asyncio's default executor would join the hung thread at `asyncio.run` exit."""
    done = subprocess.run(
        [sys.executable, "-c", HUNG_PROGRAM], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True ['hang']"
    assert "still running after its 0.1 s timeout" in done.stderr


async def test_a_hung_async_tool_is_cancelled() -> None:
    seen: list[str] = []

    @tool(timeout=0.05)
    async def wait_forever() -> str:
        """Waits for an event that never comes."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "impossible"

    toolbox = Toolbox([wait_forever])
    execution = await toolbox.run(ToolCall("c1", "wait_forever", "{}"))
    assert execution.timed_out
    assert not execution.stuck
    assert seen == ["cancelled"]
    assert toolbox.stuck == ()


async def test_an_async_tool_that_ignores_cancellation_is_reported() -> None:
    released = asyncio.Event()

    @tool(timeout=0.05)
    async def stubborn() -> str:
        """Swallows cancellation until released."""
        while not released.is_set():
            try:
                await released.wait()
            except asyncio.CancelledError:
                continue
        return "finally"

    toolbox = Toolbox([stubborn])
    execution = await toolbox.run(ToolCall("c1", "stubborn", "{}"))
    assert execution.timed_out
    assert execution.stuck
    [stuck] = toolbox.stuck
    released.set()
    assert isinstance(stuck.worker, asyncio.Task)
    await asyncio.wait({stuck.worker})
    assert toolbox.stuck == ()


async def test_keyboard_interrupt_in_a_tool_is_not_swallowed() -> None:
    @tool
    def interrupted() -> str:
        """Raises KeyboardInterrupt, as a Ctrl-C would."""
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await Toolbox([interrupted]).execute(ToolCall("c1", "interrupted", "{}"))


def test_the_loop_goes_on_after_a_timeout(release: threading.Event) -> None:
    model = ScriptedModel([call("hang"), call("submit", answer="gave up waiting")])
    agent = Agent(model, [hanging_tool(release, timeout=0.05)])
    run = agent.run_sync("Try the hanging tool.")
    assert run.outputs.model_dump() == {"answer": "gave up waiting"}
    timeout_result = next(m for m in run.transcript if isinstance(m, ToolResult))
    assert timeout_result.is_error
    assert "timed out" in timeout_result.content
