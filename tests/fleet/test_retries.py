"""What a task's step tries again: a database blip (bounded, one line per try) and a busy
session; anything else at once, so the task fails with its error."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest

from warmloop.agent.result import RunAborted
from warmloop.errors import (
    ConfigurationError,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
    SessionBusy,
    SessionError,
)
from warmloop.fleet.limited import MAX_WAIT_SECONDS
from warmloop.fleet.outage import is_blip
from warmloop.fleet.retries import (
    BLIP_WAITS,
    OUTAGE_WAIT_SECONDS,
    PROVIDER_TRIES,
    Sleep,
    lease_tries,
    riding_out,
)
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


def _run_stopped_by(cause: Exception) -> RunAborted:
    """What a run raises when its model's request failed with `cause`."""
    try:
        try:
            raise cause
        except Exception as exc:
            raise RunAborted(f"the run stopped: {exc}", Transcript()) from exc
    except RunAborted as aborted:
        return aborted


def _counting_sleep() -> tuple[list[float], Sleep]:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return waits, sleep


def test_a_busy_session_is_waited_for_one_lease_period_and_a_try_more() -> None:
    waits, sleep = _counting_sleep()

    async def busy() -> None:
        raise SessionBusy("session 's' is in use by h:1:2 (lease for another 9 s)")

    with pytest.raises(SessionBusy):
        asyncio.run(riding_out(busy, "task t", sleep=sleep, lease_seconds=10.0))
    assert sum(waits) == pytest.approx(10.0)  # LEASE_WAIT_SECONDS apart, over one lease
    assert len(waits) == lease_tries(10.0) - 1


def test_a_rate_limit_waits_the_providers_hint_and_an_outage_backs_off_bounded() -> None:
    waits, sleep = _counting_sleep()
    tries = iter(
        [
            _run_stopped_by(RateLimited("429", retry_after=7.0)),
            _run_stopped_by(ProviderUnavailable("503 after 2 retries")),
            None,
        ]
    )

    async def step() -> str:
        failure = next(tries)
        if failure is not None:
            raise failure
        return "done"

    assert asyncio.run(riding_out(step, "task t", sleep=sleep)) == "done"
    assert waits == [7.0, OUTAGE_WAIT_SECONDS]
    waits.clear()

    async def down() -> None:
        raise _run_stopped_by(ProviderUnavailable("503 after 2 retries"))

    with pytest.raises(RunAborted):
        asyncio.run(riding_out(down, "task t", sleep=sleep))
    assert len(waits) == PROVIDER_TRIES - 1
    waits.clear()

    async def quota() -> None:  # a wait longer than any task sits through
        raise _run_stopped_by(RateLimited("429", retry_after=MAX_WAIT_SECONDS + 1))

    with pytest.raises(RunAborted):
        asyncio.run(riding_out(quota, "task t", sleep=sleep))
    assert waits == []


def test_a_request_to_fix_is_no_outage_and_is_not_tried_again() -> None:
    waits, sleep = _counting_sleep()

    async def rejected() -> None:
        raise _run_stopped_by(ProviderError("400: the request was rejected"))

    with pytest.raises(RunAborted):
        asyncio.run(riding_out(rejected, "task t", sleep=sleep))
    assert waits == []
