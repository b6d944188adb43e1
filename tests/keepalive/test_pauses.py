"""`longer_retention`, the live agent's per-request TTL choice (and the keep-alive
benchmark's): a longer TTL only where a request carries it on its own (Anthropic's
markers, OpenAI Responses' `prompt_cache_options.ttl`), only from gaps the agent saw, and
never the model's own retention named again; `Learned.outlook`, what it weighs them by."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.run_records import sent
from warmloop import ScriptedModel, SystemText, Transcript, UserText
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.keepalive import pauses as pauses_module
from warmloop.keepalive.pauses import RunPauses, longer_retention
from warmloop.keepalive.pinger import KeepAlivePolicy
from warmloop.keepalive.rule import choose_retention
from warmloop.memory import PAUSES_REMEMBERED, SESSIONS_REMEMBERED, Learned
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
def test_a_longer_ttl_is_chosen_only_where_a_request_carries_it_from_gaps_seen(
    profile: CacheProfile, wire: str, prompt: int, written: int, seen: list[float]
) -> None:
    longer = longer_retention(profile, wire, prompt, written, seen)
    carried = wire == "anthropic" or (wire == "openai-responses" and profile.ttl == "30m")
    if not carried or not seen:
        assert longer is None  # a session's parameter, or nothing learned: the model's own
        return
    choice = choose_retention(profile, prompt, written, seen)
    if choice.retention.name == profile.ttl:
        assert longer is None
    else:
        assert longer == choice.retention
        assert longer.seconds > profile.retention.seconds


def test_gaps_expected_to_be_long_write_the_next_request_for_longer() -> None:
    long_gaps = [1_800.0, 2_400.0, 3_000.0]
    chosen = longer_retention(SONNET, "anthropic", 50_000, 2_000, long_gaps)
    assert chosen is not None
    assert chosen.name == "1h"
    gpt_5_6 = PROFILES[1]  # 12h sold through `prompt_cache_options.ttl` on Responses only
    past_half_an_hour = [2_400.0, 3_000.0, 7_200.0]
    chosen = longer_retention(gpt_5_6, "openai-responses", 50_000, 2_000, past_half_an_hour)
    assert chosen is not None
    assert chosen.name == "12h"
    assert longer_retention(gpt_5_6, "openai-chat", 50_000, 2_000, past_half_an_hour) is None


def test_a_follow_up_weighs_only_at_a_request_likely_to_end_its_run() -> None:
    gpt_5_6 = PROFILES[1]
    quick = [20.0] * 30  # the run's own gaps: tools of seconds
    hours = [7_200.0] * 10  # a user who came back two hours after each run
    early = longer_retention(
        gpt_5_6, "openai-responses", 50_000, 2_000, quick, follow_ups=hours, shares=(0.95, 0.03)
    )
    late = longer_retention(
        gpt_5_6, "openai-responses", 50_000, 2_000, quick, follow_ups=hours, shares=(0.2, 0.6)
    )
    assert early is None
    assert late is not None
    assert late.name == "12h"
    left = longer_retention(
        gpt_5_6, "openai-responses", 50_000, 2_000, quick, follow_ups=hours, shares=(0.2, 0.0)
    )
    assert left is None  # the run ends, but nobody comes back: nothing to keep


def test_the_outlook_reads_the_runs_end_from_their_lengths_and_follow_ups_from_their_share() -> (
    None
):
    learned = Learned()
    assert learned.outlook(0) == (1.0, 0.0)  # nothing seen: the run goes on
    for length, conversation in ((3, "a"), (3, "b"), (5, "c"), (5, "d")):
        learned.finished(length, conversation, at=100.0)
    learned.followed("a", at=3_700.0)
    learned.followed("b", at=200.0)
    learned.followed("b", at=900.0)  # a second fork of b: its end is followed once
    assert list(learned.follow_ups) == [3_600.0, 100.0]
    goes_on, followed = learned.outlook(2)  # the third request: half of the runs ended there
    assert goes_on == 0.5
    assert followed == 0.5 * 0.5
    assert learned.outlook(4) == (0.0, 0.5)  # the fifth: every run that got there ended
    goes_on, followed = learned.outlook(9)  # past them all: the mean rate, runs per request
    assert goes_on == 1 - 4 / 16


def test_a_stored_session_is_learned_once_and_the_memory_of_sessions_is_bounded() -> None:
    learned = Learned()
    stored = StoredPauses(pauses=(("tool:run_tests", 480.0),), gaps=(490.0,))
    learned.stored("s-1", stored, "c-1")
    learned.stored("s-1", stored, "c-1")  # the same session opened again: nothing learned twice
    assert list(learned.pauses["tool:run_tests"]) == [480.0]
    assert list(learned.gaps) == [490.0]
    for n in range(2 * SESSIONS_REMEMBERED):
        learned.stored(f"other-{n}", StoredPauses(), f"c-{n}")
    assert len(learned.sessions) == SESSIONS_REMEMBERED


@given(
    runs=st.lists(st.tuples(st.integers(1, 30), st.booleans(), st.booleans()), max_size=12),
    sent=st.integers(0, 40),
    first=st.booleans(),
)
def test_the_outlook_is_two_chances_that_never_add_up_past_one(
    runs: list[tuple[int, bool, bool]], sent: int, first: bool
) -> None:
    learned = Learned()
    for number, (length, was_first, followed) in enumerate(runs):
        learned.finished(length, f"c{number}", at=float(number), first=was_first)
        if followed:
            learned.followed(f"c{number}", at=float(number) + 7_200.0)
    goes_on, followed_after = learned.outlook(sent, first=first)
    assert 0.0 <= goes_on <= 1.0
    assert 0.0 <= followed_after <= 1.0
    assert goes_on + followed_after <= 1.0 + 1e-12
    if not any(followed for _, _, followed in runs):
        assert followed_after == 0.0  # nobody ever came back: no follow-up to weigh


# Round three (issue 38): what the agent feeds the TTL choice.


def test_the_ttl_choice_is_given_the_tokens_new_since_the_last_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The choice weighs writing the request's new tokens for longer: they are what the
    run appended since its last request, never nothing (a longer retention is not free)."""
    asked: list[tuple[int, int]] = []

    def choice(
        profile: CacheProfile, wire: str, prompt: int, written: int, *args: Any, **kw: Any
    ) -> None:
        asked.append((prompt, written))

    monkeypatch.setattr(pauses_module, "longer_retention", choice)
    model = ScriptedModel(name="anthropic:claude-sonnet-4-6")
    learned = Learned()
    learned.gap(600.0)
    pauses = RunPauses(model, KeepAlivePolicy(), learned, lambda e: None, lambda w: None)
    conversation = Transcript([SystemText("Run the tests. " * 400), UserText("Go.")])
    first = model.render(conversation, ())
    pauses.with_retention(first, model.facts, 0)
    sent(pauses, first, 0.0, 1_500, chars=first.length)
    conversation.append(UserText("The suite printed this. " * 200))
    second = model.render(conversation, ())
    pauses.with_retention(second, model.facts, 1)
    ratio = 1_500 / first.length
    new = int((second.length - first.length) * ratio)
    assert new > 0
    assert asked == [
        (int(first.length * 0.25), int(first.length * 0.25)),
        (int(second.length * ratio), new),
    ]


def test_the_memory_of_follow_ups_is_bounded() -> None:
    learned = Learned()
    cap = 4 * PAUSES_REMEMBERED
    for n in range(cap + 10):
        learned.followed(f"conversation-{n}", 0.0, since=float(n))
    assert len(learned.follow_ups) == cap
    assert list(learned.follow_ups)[-1] == cap + 9  # the most recent are kept
