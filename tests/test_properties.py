"""Property tests: random sessions keep the prefix (I1), pairing (I3) and determinism (I4)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warmloop import Agent, RunError, ScriptedModel, check_pairing, tool
from warmloop.messages import Message
from warmloop.providers.openai.chat_format import ChatRenderer
from warmloop.providers.scripted import Reply
from warmloop.transcript import Transcript
from warmloop.wire.guard import PrefixGuard
from warmloop.wire.stream import WireStream

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)


@tool
def echo(value: str) -> str:
    """Echo a value."""
    return value


@tool(errors_to_model=True)
def fail(value: str) -> str:
    """Always fails, and tells the model."""
    raise ValueError(value)


def arguments(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["ok", "wrong-type", "not-json", "extra"]))
    if shape == "ok":
        return json.dumps({"value": draw(text)}, ensure_ascii=draw(st.booleans()))
    if shape == "wrong-type":
        return json.dumps({"value": draw(st.integers())})
    if shape == "extra":
        return json.dumps({"value": "x", "other": 1})
    return "{" + draw(text)


@st.composite
def native_reply(draw: st.DrawFn) -> Reply:
    names = st.sampled_from(["echo", "fail", "unknown", "submit"])
    calls = draw(st.lists(st.tuples(names, st.just("")), max_size=3))
    calls = [(name, arguments(draw)) for name, _ in calls]
    return Reply(text=draw(text), calls=tuple(calls), reasoning=draw(text))


@st.composite
def text_reply(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(text)  # usually unparseable
    tool_name = draw(st.sampled_from(["echo", "fail", "submit"]))
    args = {"answer": draw(text)} if tool_name == "submit" else {"value": draw(text)}
    return f"Thought: {draw(text)}\nAction: " + json.dumps(
        {"tool": tool_name, "arguments": args}, ensure_ascii=False
    )


def run_session(model: ScriptedModel, follow_up: bool) -> list[Message]:
    seen: list[Message] = []
    agent = Agent(model, [echo, fail], max_steps=6, on_message=seen.append)
    history: Transcript | None = None
    for task in ["first task", "and a follow-up"][: 1 + follow_up]:
        try:
            history = agent.run_sync(task, history=history).transcript
        except RunError as exc:
            history = exc.transcript
            break
    return seen


def assert_invariants(model: ScriptedModel, seen: list[Message]) -> None:
    # I3 after every step: every prefix that ends at a step boundary pairs up
    for end in range(1, len(seen) + 1):
        mid_step = end < len(seen) and seen[end].kind == "tool_result"
        if seen[end - 1].kind != "assistant" and not mid_step:
            check_pairing(seen[:end])
    # I1 on the wire: per session, each request extends the previous one
    last: dict[str, str] = {}
    for rendered, session in zip(model.requests, model.sessions, strict=True):
        assert rendered.stream.startswith(last.get(session, ""))
        last[session] = rendered.stream


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(native_reply(), min_size=1, max_size=10), follow_up=st.booleans())
def test_random_native_sessions_keep_prefix_and_pairing(
    replies: list[Reply], follow_up: bool
) -> None:
    model = ScriptedModel(replies)
    assert_invariants(model, run_session(model, follow_up))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(text_reply(), min_size=1, max_size=10), follow_up=st.booleans())
def test_random_text_protocol_sessions_keep_prefix_and_pairing(
    replies: list[str], follow_up: bool
) -> None:
    model = ScriptedModel(replies, text_protocol=True)
    assert_invariants(model, run_session(model, follow_up))


@settings(max_examples=40, deadline=None)
@given(replies=st.lists(native_reply(), min_size=1, max_size=8))
def test_memoised_rendering_equals_a_fresh_render(replies: list[Reply]) -> None:
    model = ScriptedModel(replies)
    seen = run_session(model, follow_up=False)
    specs = (echo.spec, fail.spec)
    memo = ChatRenderer("m")
    transcript = Transcript()
    for message in seen:  # one growing transcript, so the memo is reused at every step
        transcript.append(message)
        assert memo.render(transcript, specs) == ChatRenderer("m").render(transcript, specs)
    # and a load of the dump renders the same bytes (I4)
    again = Transcript.load(transcript.dump())
    assert ChatRenderer("m").render(again, specs).stream == memo.render(transcript, specs).stream


@settings(max_examples=60, deadline=None)
@given(prefix=text, tail=text, edit=st.integers(min_value=0, max_value=29), char=text)
def test_guard_reports_the_first_differing_position(
    prefix: str, tail: str, edit: int, char: str
) -> None:
    def stream(body: str) -> WireStream:
        return WireStream((("message 0", body),), (), ())

    old = prefix + tail
    new = old[:edit] + char + old[edit + 1 :]
    guard = PrefixGuard()
    guard.check(stream(old))
    check = guard.check(stream(new))
    if new.startswith(old):
        assert check.bust is None
        assert check.reusable == len(old)
    else:
        assert check.bust is not None
        position = check.bust.position
        assert old[:position] == new[:position]
        assert position == len(new) or position == len(old) or old[position] != new[position]


def test_the_suite_runs_hypothesis_without_a_deadline() -> None:
    """A loaded machine must not fail a property test: the suite's profile has no deadline
    and no too-slow health check (tests/conftest.py loads it)."""
    assert settings().deadline is None
    assert HealthCheck.too_slow in settings().suppress_health_check
