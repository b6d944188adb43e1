"""Benchmark scenarios: scripted agent sessions with realistic tool outputs.

Each scenario runs warmloop's `Agent` on the `ScriptedModel` (Chat Completions wire format)
named after a provider's model (`model`, a selection string), so the Agent sizes its tool
results by that model's window and its maintenance planner decides with that provider's
cache rules, as it would live, and returns the requests it sent, timestamped. Built with
`maintained=False`, maintenance is off and the requests are the plain record of the
session, which the baselines (`baselines.py`) replay with their own prompt policies, so
every loop sees the same events.

Scenarios that need parts of warmloop still being built are extension points at the end
of this file, listed in `PENDING` with what each one needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from benchmarks.tool_outputs import MODULES, TOOLS
from warmloop import Agent, Reply, ScriptedModel, Transcript
from warmloop.agent.agent import DEFAULT_MAINTENANCE

STEP_SECONDS = 6.0
"""Model latency plus tool time per step."""
FOLLOW_UP_GAP = 90.0
"""Seconds a person takes to read an answer and ask the follow-up."""
OUTPUT_TOKENS = 60


@dataclass(frozen=True)
class Request:
    """One request a loop sends: when, the Chat Completions payload, and its output size."""

    at: float
    payload: dict[str, Any]
    output_tokens: int = OUTPUT_TOKENS

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation (system prompt first)."""
        messages: list[dict[str, Any]] = self.payload["messages"]
        return messages


@dataclass(frozen=True)
class Scenario:
    """A scripted session and the requests warmloop sent for it."""

    name: str
    description: str
    requests: tuple[Request, ...]


Call = tuple[str, dict[str, Any]]


def _reply(*calls: Call) -> Reply:
    return Reply(calls=tuple((name, json.dumps(args)) for name, args in calls))


def _explore(step: int) -> Call:
    """The step-th call of a tool-heavy exploration: listings, reads, searches, test runs."""
    module = MODULES[step % len(MODULES)]
    kind = step % 5
    if kind == 0:
        return ("list_dir", {"path": module.split("/")[0]})
    if kind in (1, 2):
        return ("read_file", {"path": module})
    if kind == 3:
        return ("search", {"pattern": f"total_{step % 7}"})
    return ("run_tests", {"target": "tests/test_totals.py"})


DEFAULT_MODEL = "anthropic:claude-sonnet-4-6"


def _run(
    model: ScriptedModel,
    replies: Sequence[Reply],
    task: str,
    history: Transcript | None = None,
    *,
    maintained: bool,
) -> Transcript:
    model.enqueue(*replies)
    maintenance = DEFAULT_MAINTENANCE if maintained else None
    agent = Agent(model, TOOLS, max_steps=len(replies) + 2, maintenance=maintenance)
    return agent.run_sync(task, history=history).transcript


def _timed(scripted: ScriptedModel, gaps: dict[int, float] | None = None) -> tuple[Request, ...]:
    at, out = 0.0, []
    for k, rendered in enumerate(scripted.requests):
        at += (gaps or {}).get(k, STEP_SECONDS) if k else 0.0
        out.append(Request(at, rendered.payload))
    return tuple(out)


def session_40_steps(model: str = DEFAULT_MODEL, maintained: bool = True) -> Scenario:
    """A 40-request tool-heavy session: 39 tool steps over the repository, then submit."""
    scripted = ScriptedModel(name=model)
    replies = [_reply(_explore(k)) for k in range(39)]
    replies.append(_reply(("submit", {"answer": "totals.py rounds half-up; use half-even."})))
    _run(
        scripted,
        replies,
        "Find why order totals are off by a cent and say where to fix it.",
        maintained=maintained,
    )
    return Scenario(
        "40-step session", "39 tool calls then submit, one call per step", _timed(scripted)
    )


def follow_up(model: str = DEFAULT_MODEL, maintained: bool = True) -> Scenario:
    """A 12-step run, then a follow-up question over its transcript (8 more steps)."""
    scripted = ScriptedModel(name=model)
    first = [_reply(_explore(k)) for k in range(11)]
    first.append(_reply(("submit", {"answer": "The rounding is in billing/totals.py."})))
    transcript = _run(scripted, first, "Where are order totals rounded?", maintained=maintained)
    boundary = len(scripted.requests)
    second = [_reply(_explore(k + 20)) for k in range(7)]
    second.append(_reply(("submit", {"answer": "Tax is rounded per line in billing/tax.py."})))
    _run(scripted, second, "And where is tax rounded?", history=transcript, maintained=maintained)
    requests = _timed(scripted, {boundary: FOLLOW_UP_GAP})
    return Scenario("follow-up", "12 steps, a follow-up question, 8 steps", requests)


def parallel_15(model: str = DEFAULT_MODEL, maintained: bool = True) -> Scenario:
    """A session whose 7th step reads 15 files in parallel (one turn, 15 results)."""
    scripted = ScriptedModel(name=model)
    replies = [_reply(_explore(k)) for k in range(6)]
    replies.append(_reply(*(("read_file", {"path": MODULES[k % len(MODULES)]}) for k in range(15))))
    replies += [_reply(_explore(k + 7)) for k in range(5)]
    replies.append(_reply(("submit", {"answer": "All 15 modules read; the bug is in totals."})))
    _run(
        scripted, replies, "Read the billing code and find the rounding bug.", maintained=maintained
    )
    return Scenario("15-call parallel step", "6 steps, one 15-call step, 5 steps", _timed(scripted))


LONG_WINDOW = 48_000
"""The 200-step session's context window: small enough that the session crosses the
compaction trigger many times (the real windows are measured in benchmarks.long_session)."""


def session_200_steps_past_compaction(
    model: str = DEFAULT_MODEL, maintained: bool = True
) -> Scenario:
    """200 tool steps in a 48k-token window: the prompt crosses the compaction trigger again
    and again, so warmloop prunes at (or, where it pays, before) the trigger. Unmaintained,
    the record outgrows the window: the baselines' own policies must keep it in."""
    scripted = ScriptedModel(name=model, context_window=LONG_WINDOW)
    replies = [_reply(_explore(k)) for k in range(199)]
    replies.append(_reply(("submit", {"answer": "Every module read; rounding is in totals."})))
    _run(scripted, replies, "Audit every module for rounding bugs.", maintained=maintained)
    return Scenario(
        "200-step session past the compaction trigger",
        "199 tool calls then submit, 48k window",
        _timed(scripted),
    )


IDLE_SECONDS = 2 * 3600.0


def session_resumed_after_2h(model: str = DEFAULT_MODEL, maintained: bool = True) -> Scenario:
    """A 20-step session, 2 hours idle (past every provider's in-memory cache), then 10 more
    steps: warmloop prunes before the first resumed request because it misses anyway."""
    scripted = ScriptedModel(name=model)
    first = [_reply(_explore(k)) for k in range(19)]
    first.append(_reply(("submit", {"answer": "Totals round half-up in billing/totals.py."})))
    transcript = _run(scripted, first, "Where are totals rounded?", maintained=maintained)
    boundary = len(scripted.requests)
    last = transcript.meta.last_request_at or 0.0
    transcript.meta = replace(transcript.meta, last_request_at=last - IDLE_SECONDS)
    second = [_reply(_explore(k + 40)) for k in range(9)]
    second.append(_reply(("submit", {"answer": "Change the quantize mode to half-even."})))
    _run(scripted, second, "How do we fix it?", history=transcript, maintained=maintained)
    requests = _timed(scripted, {boundary: IDLE_SECONDS})
    return Scenario("session resumed after 2 hours idle", "20 steps, 2 h idle, 10 steps", requests)


SCENARIOS: dict[str, Callable[[str, bool], Scenario]] = {
    "40-step session": session_40_steps,
    "follow-up": follow_up,
    "15-call parallel step": parallel_15,
    "200-step session past the compaction trigger": session_200_steps_past_compaction,
    "session resumed after 2 hours idle": session_resumed_after_2h,
}


# -- Extension point: a scenario that needs work still in flight ---------------------------


def discovery_120_tools(model: str = DEFAULT_MODEL, maintained: bool = True) -> Scenario:
    """EXTENSION POINT (toolbox): a session over a 120-tool catalog where tools are found by
    search and called through the stable gateway, against sending every schema every
    request. The toolbox has landed and `benchmarks.toolbox` measures it (four ways of
    disclosing tools); this table needs that session scripted here with the same tools."""
    raise NotImplementedError(PENDING["120-tool discovery session"])


PENDING: dict[str, str] = {
    "120-tool discovery session": "run by benchmarks.toolbox",
}
"""Scenarios the issue asks for that wait on other work, with what each one needs."""
