"""Bad tools: raising, returning what is not text (or cannot become text), 50 MB results,
async tools, hanging tools (short timeouts), validators that raise. With its errors sent to
the model (`errors_to_model=True`) the model sees a tool error or a capped result and the
run goes on; by default a tool that raises ends the run with a `RunAborted` carrying the
transcript, closed (issue 45); Ctrl-C in a tool ends the run with the transcript attached
and closed."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from tests.bad_input.harness import check_outcome, exercise, expect
from warmloop import (
    Agent,
    RunAborted,
    ScriptedModel,
    Tool,
    ToolRaised,
    call,
    check_pairing,
    raw_call,
)

RESULT_CAP = 2_000
RELEASE = threading.Event()
"""Set after each case, so a hung sync tool's thread ends instead of outliving the test."""


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")

    __repr__ = __str__


class BadMessage(Exception):
    def __str__(self) -> str:
        raise ValueError("the message itself fails")


def circular() -> dict[str, Any]:
    data: dict[str, Any] = {}
    data["self"] = data
    return data


def deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


async def hang_async() -> str:
    await asyncio.sleep(30)
    return "late"


async def ignore_cancellation() -> str:
    for _ in range(3):
        try:
            await asyncio.sleep(0.5)
        except asyncio.CancelledError:
            continue
    return "done anyway"


def hang_sync() -> str:
    RELEASE.wait(30)
    return "late"


async def async_stop() -> str:
    raise StopIteration


async def async_raise() -> str:
    raise ConnectionError("the backend is down")


def sync_returning_coroutine() -> Any:
    async def inner() -> str:
        return "awaited"

    return inner()


def recurse(n: int = 0) -> int:
    return recurse(n + 1)


class Point(BaseModel):
    x: int


class Strict(BaseModel):
    value: str

    @field_validator("value")
    @classmethod
    def picky(cls, value: str) -> str:
        raise TypeError("validators may raise anything")


def validated(data: Strict) -> str:
    return data.value


@dataclass(frozen=True)
class Case:
    function: Callable[..., Any]
    expect: str = "ok"  # `ok`: the result is not an error; `tool:<text>`: an error with it
    arguments: str = "{}"
    timeout: float | None = None
    shown: str = ""  # the (non-error) result holds this


def returning(value: Any, shown: str = "") -> Case:
    return Case(lambda: value, shown=shown)


def raising(error: BaseException, text: str) -> Case:
    def fail() -> None:
        raise error

    return Case(fail, f"tool:{text}")


CASES: dict[str, Case] = {
    "raises-value-error": raising(ValueError("bad value"), "ValueError: bad value"),
    "raises-runtime-error": raising(RuntimeError("boom"), "RuntimeError: boom"),
    "raises-os-error": raising(PermissionError(13, "Permission denied"), "PermissionError"),
    "raises-huge-message": raising(RuntimeError("x" * 5_000_000), "RuntimeError: xxx"),
    "raises-unprintable-error": raising(BadMessage(), "its message cannot be shown"),
    "raises-stop-iteration": raising(StopIteration("done"), "raised StopIteration(done)"),
    "async-raises-stop-iteration": Case(async_stop, "tool:coroutine raised StopIteration"),
    "raises-recursion": Case(recurse, "tool:RecursionError"),
    "raises-cancelled-itself": raising(asyncio.CancelledError(), "cancelled itself"),
    "returns-none": returning(None, "(no output)"),
    "returns-int": returning(42, "42"),
    "returns-float-nan": returning(math.nan, "NaN"),
    "returns-dict": returning({"a": [1, 2]}, '{"a": [1, 2]}'),
    "returns-bytes": returning(b"\x00\xff", "\\x00"),
    "returns-set": returning({1}, "{1}"),
    "returns-pydantic-model": returning(Point(x=1), '{"x":1}'),
    "returns-exception-object": returning(ValueError("as a value"), "as a value"),
    "returns-circular-dict": Case(circular, "tool:cannot be shown as text"),
    "returns-tuple-keys": Case(lambda: {(1, 2): "x"}, "tool:cannot be shown as text"),
    "returns-unprintable-object": Case(Unprintable, "tool:cannot be shown as text"),
    "returns-deep-nesting": Case(lambda: deep_list(5_000), "tool:cannot be shown as text"),
    "returns-lone-surrogates": returning("file-\udcff-\ud800.txt", "file-\ufffd-\ufffd.txt"),
    "returns-control-characters": returning("\x1b]0;title\x07\x1b[2J", "\x1b]0;title"),
    "returns-50-mb": returning("y" * 50_000_000, "[truncated: showing"),
    "returns-50-mb-error": raising(OSError("z" * 50_000_000), "truncated"),
    "async-tool": Case(lambda: asyncio.sleep(0, "slept"), shown="slept"),
    "async-tool-raises": Case(async_raise, "tool:ConnectionError: the backend is down"),
    "sync-returns-coroutine": Case(sync_returning_coroutine, shown="awaited"),
    "hangs-async": Case(hang_async, "tool:timed out after 0.2 s", timeout=0.2),
    "hangs-sync-thread": Case(hang_sync, "tool:still running in the background", timeout=0.2),
    "ignores-cancellation": Case(ignore_cancellation, "tool:timed out after 0.1 s", timeout=0.1),
    "validator-raises-type-error": Case(
        validated, "tool:a validator failed", arguments='{"data": {"value": "v"}}'
    ),
}


@pytest.fixture(autouse=True)
def release_hung_threads() -> Any:
    RELEASE.clear()
    yield
    RELEASE.set()


@pytest.mark.parametrize("name", list(CASES))
async def test_bad_tool(name: str) -> None:
    case = CASES[name]
    broken = Tool.from_function(
        case.function,
        name="broken",
        description="A tool that misbehaves.",
        timeout=case.timeout,
        errors_to_model=True,
    )
    model = ScriptedModel([raw_call("broken", case.arguments), call("submit", answer="x")])
    agent = Agent(model, tools=[broken], max_result_chars=RESULT_CAP)
    outcome = await exercise(agent)
    check_outcome(outcome, model=model)
    expect(outcome, "ok")  # sent to the model, a tool's failure never ends the run
    result = outcome.results[0]
    assert len(result.content) <= RESULT_CAP
    if case.expect == "ok":
        assert not result.is_error, result.content
        assert case.shown in result.content
    else:
        expect(outcome, case.expect)


RAISING = [
    name
    for name, case in CASES.items()
    if name.startswith(("raises-", "async-raises", "async-tool-raises", "returns-50-mb-error"))
    and name != "raises-cancelled-itself"
]
"""The cases whose tool raises an exception: by default each ends the run."""


@pytest.mark.parametrize("name", RAISING)
async def test_a_raising_tool_ends_the_run_by_default_with_the_transcript_closed(
    name: str,
) -> None:
    case = CASES[name]
    broken = Tool.from_function(case.function, name="broken", description="Misbehaves.")
    model = ScriptedModel([raw_call("broken", case.arguments), call("submit", answer="x")])
    outcome = await exercise(Agent(model, tools=[broken], max_result_chars=RESULT_CAP))
    check_outcome(outcome, model=model)
    assert isinstance(outcome.error, RunAborted)
    raised = outcome.error.__cause__
    assert isinstance(raised, ToolRaised)
    assert raised.tool == "broken"
    assert "ModelRetry" in str(outcome.error)  # says how to tell the model instead
    assert len(str(outcome.error)) < 2_000  # a huge message is not repeated whole
    assert len(model.requests) == 1  # nothing more was asked
    last = outcome.results[-1]
    assert last.content == "Not executed: the run stopped (ToolRaised)."


@pytest.mark.parametrize("where", ["sync", "async"])
async def test_ctrl_c_in_a_tool_ends_the_run_with_the_transcript_closed(where: str) -> None:
    def interrupt() -> str:
        raise KeyboardInterrupt

    async def interrupt_async() -> str:
        raise KeyboardInterrupt

    function = interrupt if where == "sync" else interrupt_async
    broken = Tool.from_function(function, name="broken", description="Interrupts.")
    model = ScriptedModel([call("broken"), call("submit", answer="x")])
    with pytest.raises(KeyboardInterrupt) as caught:
        await Agent(model, tools=[broken]).run("Go.")
    transcript = caught.value.transcript  # type: ignore[attr-defined]
    check_pairing(transcript.messages)
    assert transcript.messages[-1].content.startswith("Not executed: the run was interrupted")
