"""When the next request fits under a provider key's limits (`fleet.window`, pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop.errors import ConfigurationError
from warmloop.fleet.window import WINDOW, KeyUse, Limit, wait_seconds

NOW = 1_000


def fits(sent: list[KeyUse], at: float, limit: Limit, tokens: int) -> bool:
    """Whether one more request of `tokens` at `at` keeps the window under `limit`."""
    live = [s for s in sent if s.at > at - WINDOW]
    rpm, tpm = limit.requests_per_minute, limit.tokens_per_minute
    if rpm is not None and len(live) + 1 > rpm:
        return False
    # a request larger than the whole limit counts as the whole limit
    return tpm is None or sum(s.tokens for s in live) + min(tokens, tpm) <= tpm


sents = st.lists(
    st.builds(KeyUse, st.integers(NOW - 130, NOW).map(float), st.integers(0, 500)), max_size=30
)
limits = st.builds(
    Limit, st.one_of(st.none(), st.integers(1, 10)), st.one_of(st.none(), st.integers(1, 2000))
)


@given(sents, limits, st.integers(0, 3000), st.integers(NOW - 10, NOW + 100))
def test_a_request_waits_exactly_until_it_fits(
    sent: list[KeyUse], limit: Limit, tokens: int, paused: int
) -> None:
    wait = wait_seconds(sent, NOW, limit, tokens, float(paused))
    assert wait >= 0
    at = NOW + wait
    assert at >= paused
    assert fits(sent, at, limit, tokens)
    if wait > 0 and at > paused:  # not one instant earlier (the window's edges are whole s)
        assert not fits(sent, at - 0.5, limit, tokens)


def test_the_oldest_request_leaving_the_window_makes_room() -> None:
    sent = [KeyUse(NOW - 50.0, 10), KeyUse(NOW - 20.0, 10)]
    assert wait_seconds(sent, NOW, Limit(requests_per_minute=2), 10) == WINDOW - 50
    assert wait_seconds(sent, NOW, Limit(requests_per_minute=3), 10) == 0
    assert wait_seconds(sent, NOW, Limit(tokens_per_minute=25), 10) == WINDOW - 50
    assert wait_seconds(sent, NOW, Limit(tokens_per_minute=25), 5) == 0


def test_a_request_larger_than_the_token_limit_waits_for_an_empty_window() -> None:
    sent = [KeyUse(NOW - 30.0, 1)]
    assert wait_seconds(sent, NOW, Limit(tokens_per_minute=100), 5_000) == WINDOW - 30
    assert wait_seconds([], NOW, Limit(tokens_per_minute=100), 5_000) == 0
    # it counts as the whole limit: requests that used no tokens leave room for it
    assert wait_seconds([KeyUse(NOW - 30.0, 0)], NOW, Limit(tokens_per_minute=100), 5_000) == 0


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_a_limit_below_one_is_refused(value: object) -> None:
    with pytest.raises(ConfigurationError, match="requests per minute must be an integer"):
        Limit(requests_per_minute=value)  # type: ignore[arg-type]
