"""The suite's own prefix fixture fails every test whose cache prefix moved, by each route:
a timestamp seeded into the system prompt (across sessions), tools reordered in the payload
only, a key order change in one system block, an in-place edit of an earlier message."""

from __future__ import annotations

import pytest

from tests.conftest import scripted_violations
from warmloop import Agent, ScriptedModel, call

pytest_plugins = ["pytester"]

INNER = '''
import itertools
import pytest
from warmloop import Agent, ScriptedModel, call, tool
from warmloop.agent import steps as runner
from warmloop.messages import SystemText


@tool
def ping(host: str) -> str:
    """Ping a host."""
    return "pong"


@tool
def pong(host: str) -> str:
    """Answer a ping."""
    return "ping"


class Tampering(ScriptedModel):
    """Changes every payload after the first in one way, and nothing else."""

    def __init__(self, tamper, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tamper = tamper

    def render(self, transcript, tools):
        rendered = super().render(transcript, tools)
        if self.requests:
            self.tamper(rendered.payload)
        return rendered


def session(model):
    model.enqueue(call("ping", host="a"), call("ping", host="b"), call("submit", answer="x"))
    Agent(model, [ping, pong]).run_sync("task")


def reorder_tools(payload):
    payload["tools"] = list(reversed(payload["tools"]))


def reorder_system_keys(payload):
    payload["messages"][0] = dict(reversed(list(payload["messages"][0].items())))


def edit_earlier_message(payload):
    payload["messages"][1] = {"role": "user", "content": "task, edited"}


def test_timestamp_seeded_into_the_system_prompt(monkeypatch):
    clock = itertools.count(1)
    monkeypatch.setattr(runner, "SystemText", lambda text: SystemText(f"{text} t={next(clock)}"))
    agent = Agent(ScriptedModel([call("submit", answer="a"), call("submit", answer="b")]))
    agent.run_sync("one")
    agent.run_sync("two")


def test_tools_reordered_in_the_payload_only():
    session(Tampering(reorder_tools))


def test_key_order_changed_in_the_system_block():
    session(Tampering(reorder_system_keys))


def test_an_earlier_message_edited_in_place():
    session(Tampering(edit_earlier_message))


@pytest.mark.moves_cache_prefix(reason="reorders tools on purpose")
def test_marked():
    session(Tampering(reorder_tools))


@pytest.mark.moves_cache_prefix
def test_bare_marker():
    session(ScriptedModel())
'''


@pytest.mark.moves_cache_prefix(reason="runs inner tests whose sessions bust on purpose")
def test_the_suite_fixture_fails_every_route_to_a_moved_prefix(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("from tests.conftest import prefix_invariant, wire_log  # noqa")
    pytester.makepyfile(test_inner=INNER)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        "markers =\n    moves_cache_prefix(reason): moves the prefix\n"
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    # four unmarked tests pass their body, then error at teardown; the bare marker at setup
    result.assert_outcomes(passed=5, errors=5)
    out = result.stdout.str()
    for name in (
        "test_timestamp_seeded_into_the_system_prompt",
        "test_tools_reordered_in_the_payload_only",
        "test_key_order_changed_in_the_system_block",
        "test_an_earlier_message_edited_in_place",
    ):
        assert f"ERROR at teardown of {name}" in out
    assert "opens differently from the agent's earlier sessions" in out
    assert "tools reordered" in out
    assert "key order changed in system" in out
    assert "message 1 was replaced or re-rendered" in out
    result.stdout.fnmatch_lines(["*needs reason=*"])


@pytest.mark.moves_cache_prefix(reason="a follow-up that drops its history, on purpose")
def test_the_independent_payload_check_catches_a_follow_up_that_drops_history() -> None:
    class Forgetful(ScriptedModel):
        """Renders a follow-up as if the first run never happened."""

        def render(self, transcript, tools):  # type: ignore[no-untyped-def]
            rendered = super().render(transcript, tools)
            if transcript.meta.parent:
                messages = rendered.payload["messages"]
                rendered.payload["messages"] = [messages[0], messages[-1]]
            return rendered

    model = Forgetful([call("submit", answer="a"), call("submit", answer="b")])
    agent = Agent(model)
    first = agent.run_sync("one")
    agent.run_sync("two", history=first.transcript)
    problems = scripted_violations([model])
    assert len(problems) == 1
    assert "does not extend request 1" in problems[0]
    assert agent.busts  # the run-time guard saw it too
