"""What a task's step tries again: a database blip (bounded, one line per try) and a busy
session; anything else at once, so the task fails with its error."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest

from warmloop.agent.run import RunAborted
from warmloop.errors import ConfigurationError, SessionError
from warmloop.fleet.outage import is_blip
from warmloop.fleet.retries import BLIP_WAITS, riding_out
from warmloop.transcript import Transcript


def _store_lost_mid_run() -> RunAborted:
    """What a run raises when the session store's database restarts under it."""
    try:
        try:
            raise psycopg.errors.AdminShutdown("terminating connection due to administrator")
        except psycopg.Error as exc:
            raise SessionError(f"session store x: {exc}") from exc
    except SessionError as exc:
        try:
            raise RunAborted("the run stopped on an unexpected SessionError", Transcript()) from exc
        except RunAborted as aborted:
            return aborted


def test_a_store_lost_mid_run_is_a_blip_and_a_wrong_task_is_not() -> None:
    assert is_blip(_store_lost_mid_run())
    assert not is_blip(ConfigurationError("no agent 'x' in this worker"))


def test_a_blip_is_tried_again_with_one_line_per_try_until_it_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    waits: list[float] = []
    tries = iter([_store_lost_mid_run(), _store_lost_mid_run(), None])

    async def step() -> str:
        failure = next(tries)
        if failure is not None:
            raise failure
        return "done"

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with caplog.at_level(logging.WARNING, logger="warmloop.fleet"):
        assert asyncio.run(riding_out(step, "task t", sleep=sleep)) == "done"
    assert waits == list(BLIP_WAITS[:2])
    assert len(caplog.records) == 2
    assert all(r.exc_info is None and "AdminShutdown" in r.getMessage() for r in caplog.records)


def test_a_blip_that_lasts_ends_the_step_and_any_other_error_ends_it_at_once() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def away() -> None:
        raise _store_lost_mid_run()

    with pytest.raises(RunAborted):
        asyncio.run(riding_out(away, "task t", sleep=sleep))
    assert waits == list(BLIP_WAITS)
    waits.clear()

    async def broken() -> None:
        raise KeyError("OPENAI_API_KEY")

    with pytest.raises(KeyError):
        asyncio.run(riding_out(broken, "task t", sleep=sleep))
    assert waits == []
