"""Benchmark scenarios: scripted agent sessions with realistic tool outputs.

Each scenario runs warmloop's `Agent` on the `ScriptedModel` (Chat Completions wire format)
and returns the requests it sent, timestamped. The baselines (`baselines.py`) replay the
same sessions with their own prompt policies, so every loop sees the same events.

Scenarios that need parts of warmloop still being built are extension points at the end
of this file, listed in `PENDING` with what each one needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.tool_outputs import MODULES, TOOLS
from warmloop import Agent, ScriptedModel
from warmloop.providers.scripted import Reply
from warmloop.transcript import Transcript

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


def _run(
    model: ScriptedModel,
    replies: Sequence[Reply],
    task: str,
    history: Transcript | None = None,
) -> Transcript:
    model.enqueue(*replies)
    agent = Agent(model, TOOLS, max_steps=len(replies) + 2)
    return agent.run_sync(task, history=history).transcript


def _timed(model: ScriptedModel, gaps: dict[int, float] | None = None) -> tuple[Request, ...]:
    at, out = 0.0, []
    for k, rendered in enumerate(model.requests):
        at += (gaps or {}).get(k, STEP_SECONDS) if k else 0.0
        out.append(Request(at, rendered.payload))
    return tuple(out)


def session_40_steps() -> Scenario:
    """A 40-request tool-heavy session: 39 tool steps over the repository, then submit."""
    model = ScriptedModel(name="bench")
    replies = [_reply(_explore(k)) for k in range(39)]
    replies.append(_reply(("submit", {"answer": "totals.py rounds half-up; use half-even."})))
    _run(model, replies, "Find why order totals are off by a cent and say where to fix it.")
    return Scenario(
        "40-step session", "39 tool calls then submit, one call per step", _timed(model)
    )


def follow_up() -> Scenario:
    """A 12-step run, then a follow-up question over its transcript (8 more steps)."""
    model = ScriptedModel(name="bench")
    first = [_reply(_explore(k)) for k in range(11)]
    first.append(_reply(("submit", {"answer": "The rounding is in billing/totals.py."})))
    transcript = _run(model, first, "Where are order totals rounded?")
    boundary = len(model.requests)
    second = [_reply(_explore(k + 20)) for k in range(7)]
    second.append(_reply(("submit", {"answer": "Tax is rounded per line in billing/tax.py."})))
    _run(model, second, "And where is tax rounded?", history=transcript)
    requests = _timed(model, {boundary: FOLLOW_UP_GAP})
    return Scenario("follow-up", "12 steps, a follow-up question, 8 steps", requests)


def parallel_15() -> Scenario:
    """A session whose 7th step reads 15 files in parallel (one turn, 15 results)."""
    model = ScriptedModel(name="bench")
    replies = [_reply(_explore(k)) for k in range(6)]
    replies.append(_reply(*(("read_file", {"path": MODULES[k % len(MODULES)]}) for k in range(15))))
    replies += [_reply(_explore(k + 7)) for k in range(5)]
    replies.append(_reply(("submit", {"answer": "All 15 modules read; the bug is in totals."})))
    _run(model, replies, "Read the billing code and find the rounding bug.")
    return Scenario("15-call parallel step", "6 steps, one 15-call step, 5 steps", _timed(model))


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "40-step session": session_40_steps,
    "follow-up": follow_up,
    "15-call parallel step": parallel_15,
}


# -- Extension points: scenarios that need work still in flight ----------------------------


def session_200_steps_past_compaction() -> Scenario:
    """EXTENSION POINT (maintenance): 200 steps whose prompt crosses the compaction trigger,
    so warmloop prunes (and folds if pruning is not enough) at the trigger. Needs the
    maintenance planner in the loop; until then the numbers would only show an
    append-only loop running past its window."""
    raise NotImplementedError(PENDING["200-step session past the compaction trigger"])


def session_resumed_after_2h() -> Scenario:
    """EXTENSION POINT (sessions): a 20-step session, 2 hours idle, then resumed for 10
    more steps; warmloop prunes on resume because the cache is cold anyway. Needs
    `Session` resume with the idle-time rewrite."""
    raise NotImplementedError(PENDING["session resumed after 2 hours idle"])


def discovery_120_tools() -> Scenario:
    """EXTENSION POINT (toolbox): a session over a 120-tool catalog where tools are found by
    search and called through the stable gateway, against sending every schema every
    request. Needs the toolbox (catalog search, `call_tool`, append-only announcements)."""
    raise NotImplementedError(PENDING["120-tool discovery session"])


PENDING: dict[str, str] = {
    "200-step session past the compaction trigger": "needs maintenance: the prune/fold planner",
    "session resumed after 2 hours idle": "needs sessions: resume with the cold-cache rewrite",
    "120-tool discovery session": "needs the toolbox: catalog search and the call_tool gateway",
}
"""Scenarios the issue asks for that wait on other work, with what each one needs."""
