"""A stored session's request times read as pauses: a tool call's pause is the gap from
its request to the next one of the step; a new run's task between two requests is no
pause, nor is a call a stopped process left unanswered. And as runs: each begins at a
task (never at a correction), with the gap from its last request to the next run's first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, SystemText, ToolCall, ToolResult, UserText
from warmloop.sessions.ledger import StoredRequest
from warmloop.sessions.timeline import StoredRun, stored_pauses
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


def test_runs_begin_at_a_task_after_an_accepted_submit() -> None:
    """Two runs; the first has a correction (after an unparseable turn) and a refused
    submit, neither of which begins a run; the second begins after the accepted one."""
    t = Transcript()
    t.append(SystemText("You run tests."))
    t.append(UserText("Run the tests."))
    turns = [len(t)]
    t.append(AssistantTurn(text="garbled"))
    t.append(UserText("Call a tool."))  # a correction
    turns.append(len(t))
    t.append(AssistantTurn(tool_calls=(ToolCall("c1", "submit", "{}"),)))
    t.append(ToolResult("c1", "submit", "Read the file first.", is_error=True))  # refused
    turns.append(len(t))
    t.append(AssistantTurn(tool_calls=(ToolCall("c2", "submit", "{}"),)))
    t.append(ToolResult("c2", "submit", "Submitted."))
    t.append(UserText("And which one failed?"))  # the follow-up's task
    turns.append(len(t))
    t.append(AssistantTurn(tool_calls=(ToolCall("c3", "submit", "{}"),)))
    t.append(ToolResult("c3", "submit", "Submitted."))
    found = stored_pauses(t, requests(turns, [100.0, 110.0, 120.0, 7_320.0]))
    assert found.runs == (StoredRun(3, True, 7_200.0), StoredRun(1, False, None))


def test_a_run_s_follow_up_is_unknown_when_a_time_is_missing() -> None:
    transcript, turns = session([("submit", "Submitted."), ("", ""), ("submit", "Submitted.")])
    # `session` puts the second task after a result named submit, not an error: two runs.
    found = stored_pauses(transcript, requests(turns, [0.0, 500.0]))
    assert found.runs == (StoredRun(1, True, None), StoredRun(1, False, None))


def test_a_task_that_follows_a_stopped_run_begins_a_run_too() -> None:
    transcript, turns = session([("run_tests", STOPPED), ("", ""), ("submit", "Submitted.")])
    found = stored_pauses(transcript, requests(turns, [100.0, 400.0]), interrupted=STOPPED)
    assert found.runs == (StoredRun(1, True, 300.0), StoredRun(1, False, None))


@given(st.lists(st.sampled_from(["run_tests", "submit", ""]), max_size=12))
def test_every_request_falls_in_one_run_and_only_the_first_run_is_first(
    steps: list[str],
) -> None:
    transcript, turns = session([(name, "Submitted.") for name in steps])
    found = stored_pauses(transcript, requests(turns, [float(i) for i in range(len(turns))]))
    assert sum(run.requests for run in found.runs) == len(turns)
    assert [run.first for run in found.runs] == [i == 0 for i in range(len(found.runs))]
    assert all(run.follow_up is None or run.follow_up >= 0 for run in found.runs)
