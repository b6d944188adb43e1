"""The prefix guard at run time, and the suite's own prefix fixture."""

from __future__ import annotations

import pytest

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.cache.guard import PrefixGuard
from warmloop.providers.base import Rendered
from warmloop.providers.chat_format import ChatRenderer
from warmloop.tools import ToolSpec
from warmloop.transcript import SystemText, Transcript, UserText

pytest_plugins = ["pytester"]


@tool
def ping(host: str) -> str:
    """Ping a host."""
    return "pong"


@tool
def pong(host: str) -> str:
    """Answer a ping."""
    return "ping"


def render(system: str, tools: tuple[ToolSpec, ...] = (ping.spec,)) -> Rendered:
    transcript = Transcript([SystemText(system), UserText("task")], id="t")
    return ChatRenderer("m").render(transcript, tools)


def test_an_append_only_run_reports_no_bust_and_growing_reuse() -> None:
    model = ScriptedModel(
        [call("ping", host="a"), call("ping", host="b"), call("submit", answer="")]
    )
    run = Agent(model, [ping]).run_sync("task")
    fractions = [r.prefix.fraction for r in run.requests]
    assert fractions[0] == 0.0
    assert all(f > 0.6 for f in fractions[1:])
    assert all(r.prefix.bust is None for r in run.requests)


def test_a_timestamp_in_the_system_prompt_is_reported_with_its_position() -> None:
    guard = PrefixGuard()
    guard.check(render("Now: 2026-11-22 10:00:01"))
    check = guard.check(render("Now: 2026-11-22 10:00:02"))
    assert check.bust is not None
    assert check.bust.section == "message 0"
    assert "a number changed" in check.bust.cause
    assert check.bust.before.startswith("1")
    assert check.bust.after.startswith("2")
    assert 0 < check.fraction < 1
    assert guard.busts == [check.bust]


def test_changed_tool_definitions_are_named_as_the_cause() -> None:
    guard = PrefixGuard()
    guard.check(render("sys"))
    check = guard.check(render("sys", (pong.spec, ping.spec)))
    assert check.bust is not None
    assert check.bust.section == "tools"
    assert "tool definitions changed" in check.bust.cause
    assert "cache bust at character" in str(check.bust)


def test_a_shorter_request_is_reported_as_trimmed_history() -> None:
    guard = PrefixGuard()
    long = Transcript([SystemText("s"), UserText("a"), UserText("b")], id="t")
    guard.check(ChatRenderer("m").render(long, ()))
    check = guard.check(ChatRenderer("m").render(Transcript(long.messages[:2], id="t"), ()))
    assert check.bust is not None
    assert "shorter" in check.bust.cause


INNER = """
import pytest
from warmloop import Agent, ScriptedModel, call
from warmloop.transcript import Transcript, SystemText, UserText

def busting_run():
    model = ScriptedModel([call("submit", answer="a")])
    agent = Agent(model)
    first = agent.run_sync("one")
    # rebuilding the history (dropping the system prompt) moves the prefix
    history = Transcript(first.transcript.messages[1:], id=first.transcript.id)
    model.enqueue(call("submit", answer="b"))
    agent.run_sync("two", history=history)

def test_unmarked():
    busting_run()

@pytest.mark.moves_cache_prefix(reason="rebuilds the history on purpose")
def test_marked():
    busting_run()

@pytest.mark.moves_cache_prefix
def test_bare_marker():
    busting_run()
"""


@pytest.mark.moves_cache_prefix(reason="runs inner tests whose sessions bust on purpose")
def test_the_suite_fixture_fails_unmarked_busts_and_bare_markers(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("from tests.conftest import prefix_invariant, wire_log  # noqa")
    pytester.makepyfile(test_inner=INNER)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        "markers =\n    moves_cache_prefix(reason): moves the prefix\n"
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly")
    # the unmarked test passes its body, then errors at teardown; the bare marker at setup
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(["*cache prefix moved (I1)*"])
    result.stdout.fnmatch_lines(["*needs reason=*"])
