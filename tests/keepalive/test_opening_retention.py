"""An agent's opening (tools, instructions) is written for longer where its next fresh
start usually comes after the default TTL but within a longer one: a sub-agent sent again
by its parent's next fan-out, an agent's next session. Siblings that start together read
one entry, so the wait that counts is the one between bursts of starts."""

from __future__ import annotations

from warmloop.facts.profiles import profile_for
from warmloop.keepalive.pauses import opening_retention
from warmloop.memory import Learned

SONNET = profile_for("anthropic:claude-sonnet-4-6")


def test_siblings_starting_together_are_one_burst() -> None:
    learned = Learned()
    for at in (0.0, 6.0, 6.0, 2_300.0, 2_306.0, 4_600.0):
        learned.opened(at)
    assert learned.opening_returns(300.0) == [2_294.0, 2_294.0]


def test_an_opening_used_again_within_the_hour_is_written_for_the_hour() -> None:
    chosen = opening_retention(SONNET, "anthropic", 8_000, [1_800.0, 2_000.0])
    assert chosen is not None
    assert chosen.name == "1h"


def test_an_opening_used_again_later_than_any_ttl_or_never_seen_stays_at_the_default() -> None:
    assert opening_retention(SONNET, "anthropic", 8_000, [7_200.0, 9_000.0]) is None
    assert opening_retention(SONNET, "anthropic", 8_000, []) is None
    # Chat Completions carries no TTL per request: nothing to choose there.
    assert opening_retention(SONNET, "openai-chat", 8_000, [1_800.0]) is None
