"""A stored session's request times read as pauses: a tool call's pause is the gap from
its request to the next one of the step; a new run's task between two requests is no
pause, nor is a call a stopped process left unanswered."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from warmloop.cache.usage import Usage
from warmloop.messages import AssistantTurn, SystemText, ToolCall, ToolResult, UserText
from warmloop.sessions.records import StoredRequest
from warmloop.sessions.timeline import stored_pauses
from warmloop.transcript import Transcript

STOPPED = "Not executed: stopped."


def session(steps: list[tuple[str, str]]) -> tuple[Transcript, list[int]]:
    """A transcript of (tool name, result) steps, a new run's task before a "" step;
    and the positions of its assistant turns."""
    transcript = Transcript()
    transcript.append(SystemText("You run tests."))
    transcript.append(UserText("Run the tests."))
    turns = []
    for n, (name, result) in enumerate(steps):
        if not name:
            transcript.append(UserText("And again."))
            continue
        turns.append(len(transcript))
        transcript.append(AssistantTurn(tool_calls=(ToolCall(f"call_{n}", name, "{}"),)))
        transcript.append(ToolResult(f"call_{n}", name, result))
    return transcript, turns


def requests(turns: list[int], times: list[float]) -> list[StoredRequest]:
    return [StoredRequest(p, t, 1.0, Usage()) for p, t in zip(turns, times, strict=True)]


def test_a_tool_s_pause_is_the_gap_to_the_next_request_of_its_step() -> None:
    steps = [("run_tests", "2 failed"), ("read_file", "x"), ("", ""), ("run_tests", STOPPED)]
    transcript, turns = session([*steps, ("submit", "done")])
    found = stored_pauses(
        transcript, requests(turns, [100.0, 580.0, 590.0, 5_000.0]), interrupted=STOPPED
    )
    # read_file -> the next run's task: no pause; the stopped call: no pause.
    assert found.pauses == (("tool:run_tests", 480.0),)
    assert found.gaps == (480.0,)


def test_requests_stored_without_times_say_nothing() -> None:
    transcript, turns = session([("run_tests", "ok"), ("submit", "done")])
    assert stored_pauses(transcript, requests(turns, [0.0, 480.0])).pauses == ()


@given(st.lists(st.floats(0, 10_000, allow_nan=False), min_size=2, max_size=8))
def test_pauses_are_never_negative_and_at_most_one_per_step(times: list[float]) -> None:
    transcript, turns = session([("run_tests", "ok")] * len(times))
    found = stored_pauses(transcript, requests(turns, times))
    assert len(found.pauses) == len(found.gaps) <= len(times) - 1
    assert all(seconds >= 0 for _, seconds in found.pauses)
