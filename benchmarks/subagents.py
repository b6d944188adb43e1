"""A coding agent's tree of sub-agents, priced: warmloop's delegation against the offline
optimum and against the same tree with independent children (issue 47, must-show 1), and an
approval across processes (must-show 2, `python -m benchmarks approval` on its own).

The tree, a few times in a row (`--trees`, half an hour apart, the same agents: they learn):
a planner reads three files, then sends four explorers at once (`as_tool(parallel=True)`,
the same tools as each other), waits for them, reads one more file and submits; three
explorers take four steps (a minute or so), the fourth runs the test suite for seven
minutes and returns after eight. Each request is rendered by the provider's own renderer
and billed by the cache simulator on virtual time (`benchmarks.simulated_provider`,
`benchmarks.virtual_time`), under Anthropic's rules (Sonnet 4.6, 5m) and GPT-5.6's (30m
default, 12h sold; 16 machines routed by `prompt_cache_key`).

- warmloop: the explorers share one opening, the first goes alone until its usage shows
  it written, their keys derive from the planner's, and every agent keeps its cache by the
  keep-alive rule and picks each request's TTL by the priced rule, from what it saw.
- optimum: the same requests at the same times, with every long gap (a conversation's next
  request after more than its TTL less the margin) handled the cheapest way knowing its
  length: nothing, keep-alives just before each expiry, or the request before it written
  with the longer TTL; every combination priced by the simulator.
- independent children: what frameworks do today: each explorer a fresh conversation with
  its own prompt (its task in its instructions), all sent at once, no keep-alive.

    python -m benchmarks subagents [--trees 3] [--no-approval]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

import anthropic
from openai import AsyncOpenAI

from benchmarks.simulated_provider import Provider, Script, Sent, SimulatedModel
from benchmarks.virtual_time import run_virtual
from warmloop import Agent, AssistantTurn, KeepAlivePolicy, Model, RunContext, ToolCall, tool
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import profile_for
from warmloop.keepalive.rule import margin
from warmloop.messages import SystemText, UserText
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.simulate import CacheSimulator, SimRequest
from warmloop.transcript import Transcript

RULES = {
    "Anthropic (Sonnet 4.6, 5m)": "anthropic:claude-sonnet-4-6",
    "GPT-5.6 (30m, 12h sold)": "openai:gpt-5.6-sol",
}
MACHINES = {"anthropic": 1, "openai": 16}
LONGER = {"anthropic": "1h", "openai": "12h"}
PARENT = "You plan changes to a large codebase: read, delegate, then merge. " * 240
CHILD = "You explore one area of a codebase and report what you found. " * 190
TASKS = ["the parser", "the lexer", "the type checker", "the test suite"]
SLOW = "the test suite"
TREE_GAP = 1_800.0
READ_SECONDS, TEST_SECONDS = 2.0, 420.0


def file_text(path: str) -> str:
    """A file's contents, the same for the same path (about 1,500 tokens)."""
    rng = random.Random(path)
    return "\n".join(f"def f{rng.randrange(10**6)}(x): return x  # {path}" for _ in range(150))


@tool
async def read_file(path: str) -> str:
    """Read a file of the repository.

    Args:
        path: The file's path.
    """
    await asyncio.sleep(READ_SECONDS)
    return file_text(path)


@tool
async def grep(pattern: str) -> str:
    """Search the repository.

    Args:
        pattern: A regular expression.
    """
    await asyncio.sleep(READ_SECONDS)
    return file_text(f"grep {pattern}")[:2_000]


@tool(timeout=math.inf)
async def run_tests(target: str) -> str:
    """Run the test suite.

    Args:
        target: What to test.
    """
    await asyncio.sleep(TEST_SECONDS)
    return "2 failed, 311 passed\n" + file_text(f"tests {target}")[:3_000]


TOOLS = [read_file, grep, run_tests]


def call(turn_index: int, name: str, **arguments: object) -> AssistantTurn:
    return AssistantTurn(
        tool_calls=(ToolCall(f"call_{turn_index}_0", name, json.dumps(arguments)),)
    )


def steps(transcript: Transcript) -> int:
    return sum(isinstance(m, AssistantTurn) for m in transcript)


def change(transcript: Transcript) -> str:
    """The change a tree works on (each tree its own: only the openings are shared)."""
    task = next(m.text for m in transcript if isinstance(m, UserText))
    return task.split("#", 1)[1].split(":", 1)[0] if "#" in task else "0"


def planner_script(transcript: Transcript, turn: int) -> AssistantTurn:
    n = change(transcript)
    plan: list[tuple[str, dict[str, object]]] = [
        ("read_file", {"path": f"src/parser_{n}.py"}),
        ("grep", {"pattern": f"TODO({n})"}),
        ("read_file", {"path": f"src/lexer_{n}.py"}),
        ("explore", {"tasks": [f"#{n}: {task}" for task in TASKS]}),
        ("read_file", {"path": f"docs/notes_{n}.md"}),
        ("submit", {"answer": f"the plan for change {n}"}),
    ]
    name, arguments = plan[min(steps(transcript), len(plan) - 1)]
    return call(turn, name, **arguments)


def explorer_script(transcript: Transcript, turn: int) -> AssistantTurn:
    system = next(m.text for m in transcript if isinstance(m, SystemText))
    task = system.split("Your task: ")[1] if "Your task: " in system else ""
    task = task or next(m.text for m in transcript if isinstance(m, UserText))
    if SLOW in task:
        plan = [("read_file", f"{task}/conftest.py"), ("run_tests", task)]
        plan.append(("read_file", f"{task}.py"))
    else:
        plan = [("read_file", f"src/{task}.py"), ("grep", task), ("read_file", f"{task}/b.py")]
    k = steps(transcript)
    if k >= len(plan):
        return call(turn, "submit", answer=f"{task}: two problems found")
    name, value = plan[k]
    return call(
        turn,
        name,
        **(
            {"target": value}
            if name == "run_tests"
            else {"path": value}
            if name == "read_file"
            else {"pattern": value}
        ),
    )


def renderer(spec: str) -> Model:
    """The provider's own renderer (nothing is sent through its client)."""
    name = spec.split(":", 1)[1]
    if spec.startswith("anthropic"):
        return AnthropicModel(name, client=anthropic.AsyncAnthropic(api_key="offline"))
    return OpenAIResponsesModel(name, client=AsyncOpenAI(api_key="offline"))


def model(spec: str, provider: Provider, agent: str, script: Script) -> SimulatedModel:
    return SimulatedModel(renderer(spec), provider, agent, script)


def policy() -> KeepAlivePolicy:
    return KeepAlivePolicy(clock=lambda: asyncio.get_running_loop().time(), sleep=asyncio.sleep)


async def warmloop_trees(spec: str, provider: Provider, trees: int) -> list[float]:
    explorer = Agent(
        model(spec, provider, "explorer", explorer_script),
        TOOLS,
        name="explorer",
        instructions=CHILD,
        keepalive=policy(),
    )
    planner = Agent(
        model(spec, provider, "planner", planner_script),
        [*TOOLS, explorer.as_tool("explore", parallel=True)],
        name="planner",
        instructions=PARENT,
        keepalive=policy(),
    )
    return await in_turn(planner, trees)


async def independent_trees(spec: str, provider: Provider, trees: int) -> list[float]:
    @tool(timeout=math.inf)
    async def explore(ctx: RunContext[None], tasks: list[str]) -> str:
        """Run the explorer on each task at once.

        Args:
            tasks: One task for each run.
        """

        async def one(task: str) -> str:
            own = model(spec, provider, "explorer", explorer_script)
            agent = Agent(own, TOOLS, instructions=f"{CHILD}\nYour task: {task}", keepalive=None)
            return str((await agent.run("Begin.")).output)

        return json.dumps(await asyncio.gather(*(one(task) for task in tasks)))

    planner = Agent(
        model(spec, provider, "planner", planner_script),
        [*TOOLS, explore],
        instructions=PARENT,
        keepalive=None,
    )
    return await in_turn(planner, trees)


async def in_turn(planner: Agent, trees: int) -> list[float]:
    """Run the planner on `trees` changes in turn, TREE_GAP apart: when each started."""
    starts = []
    for n in range(trees):
        starts.append(asyncio.get_running_loop().time())
        await planner.run(f"Change #{n}: plan the refactor of the front end.")
        await asyncio.sleep(TREE_GAP)
    return starts


def provider(spec: str) -> Provider:
    return Provider(spec, profile_for(spec), machines=MACHINES[spec.split(":")[0]])


@dataclass(frozen=True)
class Gap:
    """A long gap in one conversation: the request before it (its index in the stream)
    and when the next one came."""

    before: int
    until: float


def long_gaps(stream: Sequence[Sent], ttl: float) -> list[Gap]:
    """Each conversation's gaps longer than its TTL less the margin."""
    last: dict[str, int] = {}
    gaps = []
    for index, sent in enumerate(stream):
        previous = last.get(sent.conversation)
        if previous is not None and sent.at - stream[previous].at > ttl - margin(ttl):
            gaps.append(Gap(previous, sent.at))
        last[sent.conversation] = index
    return gaps


def with_ttl(request: SimRequest, ttl: str | None, explicit: bool) -> SimRequest:
    """`request` written for `ttl` (None: the model's own)."""
    if not explicit:
        return replace(request, retention=ttl)
    marked = tuple(
        replace(b, breakpoint=(ttl or "5m")) if b.breakpoint is not None else b
        for b in request.blocks
    )
    return replace(request, blocks=marked)


def priced(
    stream: Sequence[Sent], gaps: Sequence[Gap], choice: Sequence[int], spec: str
) -> list[tuple[float, float]]:
    """The stream's requests, `(when, dollars)`, with each gap handled as `choice` says (0:
    nothing, 1: pings just before each expiry, 2: the request before it written with the
    longer TTL)."""
    profile = profile_for(spec)
    prices = prices_for(spec)
    assert prices is not None
    explicit = profile.mode == "explicit"
    longer = LONGER[spec.split(":")[0]]
    requests = [with_ttl(s.request, None, explicit) for s in stream]
    extra: list[tuple[int, SimRequest]] = []
    for gap, how in zip(gaps, choice, strict=True):
        if how == 2:
            requests[gap.before] = with_ttl(requests[gap.before], longer, explicit)
        elif how == 1:
            at = stream[gap.before].at
            ttl = profile.retention.seconds
            while at + ttl <= gap.until:
                at += ttl - 1.0
                ping = replace(
                    requests[gap.before], at=at, output_tokens=0 if profile.prewarm else 1
                )
                extra.append((stream[gap.before].machine, ping))
    events = [(s.machine, r) for s, r in zip(stream, requests, strict=True)] + extra
    events.sort(key=lambda e: e[1].at)
    caches: dict[int, CacheSimulator] = {}
    billed = []
    for machine, request in events:
        cache = caches.setdefault(machine, CacheSimulator(profile))
        billed.append((request.at, cost_breakdown(cache.request(request), prices).total))
    return billed


def optimum(stream: Sequence[Sent], spec: str) -> list[tuple[float, float]]:
    """The stream's requests, `(when, dollars)`, under the cheapest way to handle its long
    gaps, every combination tried."""
    gaps = long_gaps(stream, profile_for(spec).retention.seconds)
    best: list[tuple[float, float]] = []
    least = math.inf
    for choice in itertools.product((0, 1, 2), repeat=len(gaps)):
        billed = priced(stream, gaps, choice, spec)
        cost = sum(dollars for _, dollars in billed)
        if cost < least:
            best, least = billed, cost
    return best


@dataclass(frozen=True)
class Arm:
    """One arm's cost, its last tree's, and what it did (None: not counted)."""

    name: str
    dollars: float
    last_tree: float
    keepalives: int | None = None
    written: int | None = None
    """Tokens the explorers' first requests wrote to the cache."""


def arm(name: str, provider: Provider, last_start: float) -> Arm:
    first: dict[str, Sent] = {}
    for sent in provider.log:
        if sent.agent == "explorer" and not sent.keepalive:
            first.setdefault(sent.conversation, sent)
    return Arm(
        name,
        provider.dollars(),
        sum(s.dollars for s in provider.log if s.at >= last_start),
        sum(s.keepalive for s in provider.log),
        sum(s.usage.cache_write_tokens for s in first.values()),
    )


def measured(spec: str, trees: int) -> list[Arm]:
    """The three arms of `trees` trees under `spec`'s rules."""
    ours = provider(spec)
    starts = run_virtual(warmloop_trees(spec, ours, trees))
    best = optimum([s for s in ours.log if not s.keepalive], spec)
    theirs = provider(spec)
    their_starts = run_virtual(independent_trees(spec, theirs, trees))
    optimal = Arm(
        "offline optimum", sum(d for _, d in best), sum(d for at, d in best if at >= starts[-1])
    )
    return [
        arm("warmloop", ours, starts[-1]),
        optimal,
        arm("independent children", theirs, their_starts[-1]),
    ]


def table(title: str, arms: Sequence[Arm]) -> str:
    best = next(a for a in arms if a.name == "offline optimum")
    lines = [
        title,
        f"  {'arm':<22} {'cost':>9} {'x optimum':>10} {'last tree':>10} {'x optimum':>10}"
        f" {'keep-alives':>12} {'explorers wrote':>16}",
    ]
    for a in arms:
        pings = "-" if a.keepalives is None else f"{a.keepalives}"
        written = "-" if a.written is None else f"{a.written:,}"
        lines.append(
            f"  {a.name:<22} ${a.dollars:>8.4f} {a.dollars / best.dollars:>10.3f}"
            f" ${a.last_tree:>9.4f} {a.last_tree / best.last_tree:>10.3f}"
            f" {pings:>12} {written:>16}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trees", type=int, default=3)
    parser.add_argument("--no-approval", action="store_true")
    args = parser.parse_args(argv)
    print(
        f"{args.trees} trees, {TREE_GAP / 60:.0f} minutes apart: a planner, 4 explorers at "
        f"once (one back after about {TEST_SECONDS / 60 + 1:.0f} minutes), a merge\n"
    )
    for title, spec in RULES.items():
        print(table(title, measured(spec, args.trees)))
        print()
    if not args.no_approval:
        from benchmarks.approval_process import demonstrate

        demonstrate(print)
