"""The loop's shape (issue 31): a request is a short sequence of named seams, every module
of the loop and of keep-alive reads in one sitting, a run's settings come from one
declaration, and the keep-alive reads the run's own records of what it sent."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path

from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, call
from warmloop.agent.request import RequestCycle
from warmloop.agent.settings import Settings

PACKAGE = Path(inspect.getfile(Agent)).parent.parent
MAX_QUERY_LINES = 20
MAX_MODULE_LINES = 400


def test_a_request_is_a_short_sequence_of_named_seams() -> None:
    source = inspect.getsource(RequestCycle.query).splitlines()
    assert len(source) <= MAX_QUERY_LINES, "\n".join(source)
    body = "\n".join(source)
    for seam in ("render", "maintain", "before_request", "send", "after_response", "append"):
        assert f"self.{seam}" in body, seam


def test_no_module_of_the_loop_or_of_keep_alive_is_over_400_lines() -> None:
    for package in ("agent", "keepalive"):
        for path in sorted((PACKAGE / package).glob("*.py")):
            lines = len(path.read_text("utf-8").splitlines())
            assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines"


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
    assert runner.pauses.requests is runner.sent  # the run's list, never a copy
    assert [sent.record for sent in runner.sent] == run.requests
    last = runner.pauses.last
    assert last is not None
    assert last.prompt_tokens == run.requests[-1].usage.prompt_tokens
