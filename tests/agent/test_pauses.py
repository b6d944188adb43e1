"""`longer_retention`, the live agent's per-request TTL choice (and the keep-alive
benchmark's): a longer TTL only where it is a cache marker (Anthropic), only from gaps the
agent saw, and never the model's own retention named again."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from warmloop.agent.learned import SESSIONS_REMEMBERED, Learned
from warmloop.agent.pauses import longer_retention
from warmloop.cache.profiles import CacheProfile, profile_for
from warmloop.maintenance.keepalive import choose_retention
from warmloop.sessions.timeline import StoredPauses

SONNET = profile_for("anthropic:claude-sonnet-4-6")
PROFILES = (SONNET, profile_for("openai:gpt-5.6-sol"), profile_for("openai:gpt-5"))
WIRES = ("anthropic", "openai-responses", "openai-chat", "gemini")

gaps = st.lists(st.floats(0, 50_000), max_size=8)


@given(
    profile=st.sampled_from(PROFILES),
    wire=st.sampled_from(WIRES),
    prompt=st.integers(0, 200_000),
    written=st.integers(0, 200_000),
    seen=gaps,
)
def test_a_longer_ttl_is_chosen_only_on_anthropic_from_gaps_seen(
    profile: CacheProfile, wire: str, prompt: int, written: int, seen: list[float]
) -> None:
    longer = longer_retention(profile, wire, prompt, written, seen)
    if wire != "anthropic" or not seen:
        assert longer is None  # a request parameter, or nothing learned: the model's own
        return
    choice = choose_retention(profile, prompt, written, seen)
    if choice.retention.name == profile.ttl:
        assert longer is None
    else:
        assert longer == choice.retention
        assert longer.seconds > profile.retention.seconds


def test_gaps_expected_to_be_long_write_the_next_request_for_an_hour_on_anthropic() -> None:
    long_gaps = [1_800.0, 2_400.0, 3_000.0]
    chosen = longer_retention(SONNET, "anthropic", 50_000, 2_000, long_gaps)
    assert chosen is not None
    assert chosen.name == "1h"
    gpt_5_6 = PROFILES[1]  # 12h sold, but a request parameter the guard would read
    assert longer_retention(gpt_5_6, "openai-responses", 50_000, 2_000, long_gaps) is None


def test_a_stored_session_is_learned_once_and_the_memory_of_sessions_is_bounded() -> None:
    learned = Learned()
    stored = StoredPauses(pauses=(("tool:run_tests", 480.0),), gaps=(490.0,))
    learned.stored("s-1", stored)
    learned.stored("s-1", stored)  # the same session opened again: nothing learned twice
    assert list(learned.pauses["tool:run_tests"]) == [480.0]
    assert list(learned.gaps) == [490.0]
    for n in range(2 * SESSIONS_REMEMBERED):
        learned.stored(f"other-{n}", StoredPauses())
    assert len(learned.sessions) == SESSIONS_REMEMBERED
