"""The wide Anthropic step: a session whose seventh step reads 60 files in parallel.

A60: 6 exploration steps, one step of 60 `read_file` calls over distinct modules (about
670 tokens each, 40,000 in all), 30 reads of file-sized results (about 3,000 tokens each),
then submit: 38 requests on the default 40-step budget. A60w: the same run, then a
follow-up question over its transcript after a person's pause (90 s) and 8 more steps.
Each is run by the Agent with every default on the `ScriptedModel` named after the
provider's model, and priced by the simulator against the same session with maintenance
off (the ideal of the issue: every request reuses all its predecessor made reusable).
Arms: warmloop; the run's age counted in requests, not tool calls (warmloop before);
the step budget taken as the horizon (warmloop before the horizon rule); warmloop after
nine earlier runs of the same task (what an agent in use has learned); and the optimum,
the cheapest schedule of the same prune over all request points, knowing the future. Each
row names the requests at which it pruned. Then the bet a first run makes: A60 cut short
after 8 to 15 reads, which observes what A60 does up to its end, warmloop against the age
in requests.

The sweep (`--sweep`): warmloop's first run of A60 and A60w, every default, with the large
files' size and the model's window each scaled by 0.7, 1.0 and 1.3 (targets: A60 at most
0.74 of the ideal, A60w at most 0.70, everywhere).

    python -m benchmarks wide_step [--spec anthropic:claude-sonnet-4-6] [--sweep]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.facts import FILE_CHARS, file_text
from benchmarks.long_session import Recorder
from benchmarks.measure import sim_requests
from benchmarks.scenarios import FOLLOW_UP_GAP, STEP_SECONDS, Request, _explore
from benchmarks.tool_outputs import TOOLS
from warmloop import Agent, Reply, ScriptedModel, Tool, ToolSpec, Transcript, tool
from warmloop.agent import request as runner
from warmloop.agent.agent import DEFAULT_MAINTENANCE
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import profile_for
from warmloop.maintenance.prune import plan_prune
from warmloop.simulate import simulate
from warmloop.transcript import scratch_copy

WIDE = 60
LATER = 30
EARLIER_RUNS = 9
ANTHROPIC = "anthropic:claude-sonnet-4-6"
TASK = "Read every module of the package, then the large files, and find the rounding bug."
FOLLOW_UP = "And where is tax rounded?"


def _reply(*calls: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(calls=tuple((name, json.dumps(args)) for name, args in calls))


def wide_replies(later: int = LATER) -> list[Reply]:
    """6 steps, one step of `WIDE` reads of distinct modules, `later` file reads, submit."""
    replies = [_reply(_explore(k)) for k in range(6)]
    replies.append(_reply(*(("read_file", {"path": f"pkg/module_{k}.py"}) for k in range(WIDE))))
    replies += [_reply(("read_large", {"path": f"src/module_{k}.py"})) for k in range(later)]
    replies.append(_reply(("submit", {"answer": "The rounding is in src/module_7.py."})))
    return replies


def follow_up_replies() -> list[Reply]:
    replies = [_reply(_explore(k + 20)) for k in range(7)]
    replies.append(_reply(("submit", {"answer": "Tax is rounded per line."})))
    return replies


@dataclass
class Scale:
    """The sweep's scales: the large files' characters and the model's window (None: the
    table's)."""

    chars: int = FILE_CHARS
    window: int | None = None


SCALE = Scale()


@tool
def read_large(path: str) -> str:
    """Read one large file of the repository."""
    return file_text(int(path.removeprefix("src/module_").removesuffix(".py")), SCALE.chars)


def tools() -> list[Tool]:
    return [*TOOLS, read_large]


@dataclass
class Session:
    """One arm's session: the requests as sent (timed), their transcripts, the tools."""

    requests: list[Request]
    sent: list[Transcript]
    specs: list[ToolSpec]
    model: ScriptedModel

    def prune_points(self) -> list[int]:
        """Requests (from 1) sent just after a rewrite."""
        sent = self.sent
        return [k + 1 for k in range(1, len(sent)) if sent[k].revision != sent[k - 1].revision]


def session(
    spec: str, maintained: bool, follow_up: bool, earlier: int = 0, later: int = LATER
) -> Session:
    """The Agent's requests for A60 (A60w with `follow_up`), after `earlier` runs of the
    same task by the same agent (their lengths are what it has learned); `later`: the file
    reads after the wide step (fewer: the same run cut short)."""
    scripted = ScriptedModel(name=spec, context_window=SCALE.window)
    model = Recorder(scripted)
    agent = Agent(model, tools(), maintenance=DEFAULT_MAINTENANCE if maintained else None)
    for _ in range(earlier):
        scripted.enqueue(*wide_replies())
        agent.run_sync(TASK)
    start = len(scripted.requests)
    model.sent.clear()
    scripted.enqueue(*wide_replies(later))
    run = agent.run_sync(TASK)
    boundary = len(scripted.requests) - start
    if follow_up:
        scripted.enqueue(*follow_up_replies())
        agent.run_sync(FOLLOW_UP, history=run.transcript)
    at, requests = 0.0, []
    for k, rendered in enumerate(scripted.requests[start:]):
        at += (FOLLOW_UP_GAP if follow_up and k == boundary else STEP_SECONDS) if k else 0.0
        requests.append(Request(at, rendered.payload))
    return Session(requests, list(model.sent), list(agent.tool_specs), scripted)


def dollars(requests: Sequence[Request], spec: str) -> float:
    """The requests' dollars under `spec`'s cache rules and prices (the simulator)."""
    prices = prices_for(spec)
    assert prices is not None, spec
    profile = profile_for(spec)
    outcomes = simulate(sim_requests(requests, profile), profile)
    return sum(cost_breakdown(o.usage, prices).total for o in outcomes)


def optimum(off: Session, spec: str) -> tuple[float, list[int]]:
    """The cheapest schedule of the default prune over the session with maintenance off:
    dynamic programming over (request, last prune point), each request priced after the one
    before it; the prune made at request j replaces what `plan_prune` offers there."""
    window = SCALE.window or profile_for(spec).context_window
    policy = DEFAULT_MAINTENANCE.prune.for_window(window)
    eligible = [plan_prune(t, policy, lambda text: -(-len(text) // 4)).edits for t in off.sent]
    cache: dict[tuple[int, int], Request] = {}

    def request(k: int, j: int) -> Request:
        if (k, j) not in cache:
            transcript = scratch_copy(off.sent[k])
            if j >= 0 and eligible[j]:
                transcript.replace_content(eligible[j])
            payload = off.model.render(transcript, off.specs).payload
            cache[(k, j)] = Request(off.requests[k].at, payload)
        return cache[(k, j)]

    def step(k: int, j: int, before: int) -> float:
        pair = [request(k - 1, before), request(k, j)]
        return dollars(pair, spec) - dollars(pair[:1], spec)

    best: dict[int, tuple[float, list[int]]] = {-1: (dollars([request(0, -1)], spec), [])}
    for k in range(1, len(off.sent)):
        nxt = {j: (total + step(k, j, j), path) for j, (total, path) in best.items()}
        if eligible[k] and eligible[k] != eligible[k - 1]:
            nxt[k] = min(
                ((total + step(k, k, j), [*path, k + 1]) for j, (total, path) in best.items()),
                key=lambda option: option[0],
            )
        best = nxt
    return min(best.values(), key=lambda option: option[0])


def arms() -> list[tuple[str, Callable[..., int], int]]:
    """(arm, the horizon rule the runner asks, earlier runs) of the table's first three rows
    and the rule before the run's age counted its tool calls."""
    original: Callable[..., int] = runner.requests_ahead  # type: ignore[attr-defined]
    return [
        ("warmloop", original, 0),
        ("age in requests (warmloop before)", lambda d, left, e=(), **_: original(d, left, e), 0),
        ("step budget as horizon", lambda done, left, earlier=(), **_: left, 0),
        (f"warmloop after {EARLIER_RUNS} earlier runs", original, EARLIER_RUNS),
    ]


def ratio(spec: str, ahead: Callable[..., int], **kwargs: Any) -> tuple[float, list[int]]:
    """(cost vs maintenance off, prune points) of one session under the horizon `ahead`."""
    off = session(spec, False, **kwargs)
    original: Callable[..., int] = runner.requests_ahead  # type: ignore[attr-defined]
    try:
        runner.requests_ahead = ahead  # type: ignore[attr-defined]
        on = session(spec, True, **kwargs)
    finally:
        runner.requests_ahead = original  # type: ignore[attr-defined]
    return dollars(on.requests, spec) / dollars(off.requests, spec), on.prune_points()


def rows(spec: str) -> list[tuple[str, str, float, list[int]]]:
    """(session, arm, cost vs ideal, prune points) for A60 and A60w."""
    out = []
    for name, follow_up in (("A60", False), ("A60w", True)):
        for arm, ahead, earlier in arms():
            out.append((name, arm, *ratio(spec, ahead, follow_up=follow_up, earlier=earlier)))
        off = session(spec, False, follow_up)
        best, points = optimum(off, spec)
        out.append((name, "optimum", best / dollars(off.requests, spec), points))
    return out


CUT = (8, 9, 10, 12, 15)
"""File reads after the wide step in the runs cut short (A60 has 30)."""


def cut_short(spec: str) -> list[tuple[int, int, list[float]]]:
    """The bet the wide step's first-run horizon makes: A60 cut to `CUT` reads after the
    wide step, (reads, requests, cost vs maintenance off per arm of `arms()[:2]`)."""
    out = []
    for later in CUT:
        cells = [ratio(spec, ahead, follow_up=False, later=later)[0] for _, ahead, _ in arms()[:2]]
        out.append((later, 8 + later, cells))
    return out


SCALES = (0.7, 1.0, 1.3)
TARGETS = {"A60": 0.74, "A60w": 0.70}


def sweep(spec: str) -> str:
    """warmloop's first run of A60 and A60w against the ideal, the large files and the
    window scaled (`SCALES`)."""
    lines = [
        "| large file (chars) | window (tokens) | A60 | A60w | prunes (A60) |",
        "|---|---|---|---|---|",
    ]
    worst = dict.fromkeys(TARGETS, 0.0)
    original: Callable[..., int] = runner.requests_ahead  # type: ignore[attr-defined]
    for chars_scale in SCALES:
        for window_scale in SCALES:
            SCALE.chars = round(FILE_CHARS * chars_scale)
            SCALE.window = round(profile_for(spec).context_window * window_scale)
            try:
                a60, points = ratio(spec, original, follow_up=False)
                a60w, _ = ratio(spec, original, follow_up=True)
            finally:
                SCALE.chars, SCALE.window = FILE_CHARS, None
            worst = {"A60": max(worst["A60"], a60), "A60w": max(worst["A60w"], a60w)}
            lines.append(
                f"| {round(FILE_CHARS * chars_scale):,} "
                f"| {round(profile_for(spec).context_window * window_scale):,} "
                f"| {a60:.3f} | {a60w:.3f} | {points} |"
            )
    said = ", ".join(
        f"{name} {worst[name]:.3f} (target {TARGETS[name]}: "
        f"{'met' if worst[name] <= TARGETS[name] else 'missed'})"
        for name in TARGETS
    )
    lines.append(f"\nworst: {said}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default=ANTHROPIC, help="the provider's model (selection)")
    parser.add_argument("--sweep", action="store_true", help="only the +-30%% sweep")
    args = parser.parse_args()
    if args.sweep:
        print(sweep(args.spec))
        return
    print("| session | arm | cost vs ideal (maintenance off) | prunes before request |")
    print("|---|---|---|---|")
    for name, arm, cost, points in rows(args.spec):
        print(f"| {name} | {arm} | {cost:.3f} | {points or 'none'} |", flush=True)
    print("\n| A60 cut short: reads after the wide step | requests | warmloop | age in requests |")
    print("|---|---|---|---|")
    for later, requests, cells in cut_short(args.spec):
        print(f"| {later} | {requests} | {cells[0]:.3f} | {cells[1]:.3f} |", flush=True)
