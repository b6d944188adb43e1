"""The loop's shape (issue 31): a request is a short sequence of named seams, a run's
settings come from one declaration, and the keep-alive reads the run's own records of what
it sent. (A module's length is no rule: past ~400 lines is a prompt to look for a second
concept, never to split one; issue 44.)"""

from __future__ import annotations

import inspect
from dataclasses import fields

from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, call
from warmloop.agent.request import RequestCycle
from warmloop.agent.settings import Settings

MAX_QUERY_LINES = 20


def test_a_request_is_a_short_sequence_of_named_seams() -> None:
    source = inspect.getsource(RequestCycle.query).splitlines()
    assert len(source) <= MAX_QUERY_LINES, "\n".join(source)
    body = "\n".join(source)
    for seam in ("render", "maintain", "before_request", "send", "after_response", "append"):
        assert f"self.{seam}" in body, seam


class Answer(BaseModel):
    answer: str


def test_a_run_s_settings_are_the_agent_s_attributes_of_the_same_names() -> None:
    def check(outputs: BaseModel, messages: object) -> str | None:
        return None

    agent = Agent(ScriptedModel(), outputs=Answer, max_steps=7, keepalive=None, check_outputs=check)
    settings = agent.settings()
    for f in fields(Settings):
        assert getattr(settings, f.name) is getattr(agent, f.name), f.name


async def test_the_keep_alive_reads_the_run_s_own_records() -> None:
    agent = Agent(ScriptedModel([call("submit", answer="done")]), outputs=Answer)
    runner = agent._runner("Say done.", None, None)
    run = await runner.run()
    state = runner.state
    assert state.pauses.requests is state.sent  # the run's list, never a copy
    assert [sent.record for sent in state.sent] == run.requests
    last = state.pauses.last
    assert last is not None
    assert last.prompt_tokens == run.requests[-1].usage.prompt_tokens
