"""The fleet's periods are numbers of seconds, refused at once otherwise (issue 49): a bool
is an int to Python (`True` would be a one-second heartbeat) and a string read from a
config file is no number; either is a ConfigurationError that names the period, before a
worker starts, never a TypeError from deep in its heartbeat."""

from __future__ import annotations

import pytest

from warmloop.errors import ConfigurationError
from warmloop.fleet.liveness import Periods


@pytest.mark.parametrize("period", ["heartbeat", "lease"])
@pytest.mark.parametrize("wrong", [True, False, "5", "5.0", None, [5.0]])
def test_a_period_that_is_not_a_number_of_seconds_is_refused_by_name(
    period: str, wrong: object
) -> None:
    with pytest.raises(ConfigurationError, match=f"the {period} period is a number of seconds"):
        Periods(**{period: wrong})  # type: ignore[arg-type]


def test_whole_and_fractional_seconds_are_periods() -> None:
    assert Periods(heartbeat=5, lease=120).bound == 125
    assert Periods(heartbeat=0.5, lease=4.0).dead_after == 1.5
