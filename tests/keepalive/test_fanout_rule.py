"""The fan-out rule both a fleet's batch and an agent's children follow: the others wait
for the leader's usage to show the opening cached, and go anyway, saying why, once it
finished or a while after its first response without showing it."""

from __future__ import annotations

from warmloop.facts.usage import Usage
from warmloop.keepalive.leader_first import CONFIRM_SECONDS, Warmed, released


def test_a_write_or_a_read_releases_the_others_confirmed() -> None:
    assert released(Usage(cache_write_tokens=6000), 1, finished=False, waited=0.0) == Warmed(
        True, 1
    )
    assert released(Usage(cache_read_tokens=6000), 2, finished=False, waited=5.0) == Warmed(True, 2)


def test_without_either_the_others_wait_until_the_leader_ends_or_the_time_is_up() -> None:
    plain = Usage(input_tokens=6000)
    assert released(plain, 0, finished=False, waited=None) is None
    assert released(plain, 1, finished=False, waited=CONFIRM_SECONDS - 1) is None
    late = released(plain, 1, finished=False, waited=CONFIRM_SECONDS)
    assert late is not None
    assert not late.confirmed
    assert "within 60 s" in late.why
    ended = released(plain, 3, finished=True, waited=1.0)
    assert ended is not None
    assert not ended.confirmed
    assert "before it ended" in ended.why


def test_a_leader_that_ended_without_a_request_releases_them_with_no_reason_of_its_own() -> None:
    assert released(Usage(), 0, finished=True, waited=None) == Warmed(False, 0)
