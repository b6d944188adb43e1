"""One-shot jobs and interactive sessions through `warmloop proxy`'s keep-alive (issue 46,
must-show 4).

A loopback Messages API (claude-sonnet-4-6, a 20,000-token prompt: each answer's usage says
so) and the official Anthropic SDK through the proxy, on a faked clock. First `--headless`
jobs of a batch agent, one a minute, as `claude -p` runs them: a request that asks for a
tool, the tool's result at once, the final answer, and nothing after. Then `--interactive`
sessions of the team's coding agent, each a person taking `--turns` turns
`--think-minutes` apart (past the 5-minute TTL). A request written for an hour (the
proxy's longer TTL, where a conversation's pauses say it pays) keeps its cache an hour. The clock
moves from one keep-alive's due moment to the next (`KeepAlives.due`, `tick`), so nothing
waits. Two arms: the proxy as it is (a conversation with no pauses of its own is priced by
the pauses the proxy has seen, and those keep-alives may spend half the daily cap at most)
and the proxy before issue 46 (the rent-or-buy rule for every new conversation, the whole
cap for anyone).

    python -m benchmarks proxy_returns [--headless 100 --interactive 10 --turns 4 --first 10]
"""

from __future__ import annotations

import argparse
import heapq
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anthropic

from benchmarks.proxy_pause import serving
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import Caps
from warmloop.proxy.server import Proxy

MODEL = "claude-sonnet-4-6"
PREFIX = 20_000
TTL = 300.0
HANG_GUARD = 60.0
TOOLS: Any = [{"name": "run", "description": "Run a command.", "input_schema": {"type": "object"}}]


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Upstream:
    """The loopback Messages API: a prompt of PREFIX tokens, read from the cache while it is
    warm; each conversation's keep-alives and when its cache was last used."""

    clock: Clock
    pings: Counter[str] = field(default_factory=Counter)
    used: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per conversation: when its cache was last used, and until when it lives."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def warm(self, who: str) -> bool:
        """Whether `who`'s cache is alive now (a request written for an hour lives one)."""
        return self.clock() < self.used.get(who, (0.0, -1.0))[1]

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        first = body["messages"][0]["content"]
        who = first if isinstance(first, str) else first[0]["text"]
        ping = body.get("max_tokens") == 1
        hour = '"ttl": "1h"' in json.dumps(body)
        with self.lock:
            warm = self.warm(who)
            ends = self.used.get(who, (0.0, -1.0))[1]
            self.used[who] = (self.clock(), max(ends, self.clock() + (3600.0 if hour else TTL)))
            self.pings[who] += ping
        last = body["messages"][-1]["content"]
        tool_result = isinstance(last, list) and last[0].get("type") == "tool_result"
        asks_tool = who.startswith("job") and len(body["messages"]) == 1
        content: Any = (
            [{"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}}]
            if asks_tool
            else [{"type": "text", "text": "done" if tool_result else "ok"}]
        )
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": "tool_use" if asks_tool else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 20,
                "cache_read_input_tokens": PREFIX if warm else 0,
                "cache_creation_input_tokens": 0 if warm else PREFIX,
                "output_tokens": 1 if ping else 40,
            },
        }


@dataclass(frozen=True)
class Arm:
    """What one arm's keep-alives did."""

    name: str
    first_jobs: int
    """Keep-alives sent for the first `--first` one-shot jobs."""
    later_jobs: int
    """...and for the ones after them."""
    job_usd: float
    interactive: int
    """Keep-alives sent for the interactive sessions."""
    interactive_usd: float
    warm: int
    """Turns of the interactive sessions (their first aside) that found the cache warm."""
    returns: int


def run_arm(args: argparse.Namespace, learned: bool) -> Arm:
    """The jobs, then the sessions, through the proxy with its keep-alive."""
    clock = Clock()
    upstream = Upstream(clock)
    caps = Caps() if learned else Caps(unproven_share=1.0)
    with serving(upstream) as url:
        proxy = Proxy(url, None, clock=clock, fixes=Fixes(), keepalive=caps, tick_thread=False)
        with proxy.start():
            keepalives = proxy.keepalives
            assert keepalives is not None
            keepalives.population = learned
            events, returns = schedule(args, proxy, upstream)
            heapq.heapify(events)
            while events:
                at, _, event = heapq.heappop(events)
                while (due := keepalives.due()) is not None and due < at:
                    clock.now = max(clock.now, due)
                    keepalives.tick()
                clock.now = at
                event()
    jobs = [upstream.pings[f"job {n}: run the nightly check"] for n in range(args.headless)]
    sessions = [
        upstream.pings[f"session {s}: help me with the release"] for s in range(args.interactive)
    ]
    ping_usd = 0.3e-6 * PREFIX + 15e-6  # a 20,000-token read and one output token
    return Arm(
        "as built" if learned else "before issue 46",
        sum(jobs[: args.first]),
        sum(jobs[args.first :]),
        sum(jobs) * ping_usd,
        sum(sessions),
        sum(sessions) * ping_usd,
        sum(returns),
        len(returns),
    )


Event = tuple[float, int, Callable[[], None]]


def schedule(
    args: argparse.Namespace, proxy: Proxy, upstream: Upstream
) -> tuple[list[Event], list[bool]]:
    """The jobs and the people's turns as (time, order, action); the list each person's
    return appends to (whether it found the cache warm)."""
    client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-bench", max_retries=0)
    agent = "You are a careful coding agent. " * (PREFIX // 7)
    bot = "You run the nightly checks and report. " * (PREFIX // 8)
    events: list[Event] = []
    returns: list[bool] = []

    def ask(messages: Any, system: str = agent) -> None:
        before = proxy.handled
        client.messages.create(
            model=MODEL, max_tokens=1024, system=system, tools=TOOLS, messages=messages
        )
        assert proxy.wait_handled(before + 1, HANG_GUARD)

    def job(n: int) -> None:
        task: Any = [{"role": "user", "content": f"job {n}: run the nightly check"}]
        ask(task, bot)
        use = {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}}
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
        ask(
            [*task, {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}],
            bot,
        )

    def person(s: int, turn: int, history: list[Any]) -> None:
        who = f"session {s}: help me with the release"
        if turn:
            returns.append(upstream.warm(who))
            history += [{"role": "assistant", "content": "ok"}]
        history += [{"role": "user", "content": who if not turn else f"turn {turn}"}]
        ask(list(history))

    for n in range(args.headless):
        events.append((60.0 * n, len(events), partial(job, n)))
    start = 60.0 * args.headless + 600
    for s in range(args.interactive):
        history: list[Any] = []
        for turn in range(args.turns):
            at = start + 30.0 * s + args.think_minutes * 60 * turn
            events.append((at, len(events), partial(person, s, turn, history)))
    return events, returns


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headless", type=int, default=100)
    parser.add_argument("--interactive", type=int, default=10)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--think-minutes", type=float, default=6.0)
    parser.add_argument("--first", type=int, default=10, help="jobs counted as the first few")
    args = parser.parse_args(argv)
    arms = [run_arm(args, True), run_arm(args, False)]
    print(
        f"{MODEL}, a {PREFIX:,}-token prompt; {args.headless} one-shot jobs a minute apart, "
        f"then {args.interactive} sessions of {args.turns} turns {args.think_minutes:g} min apart"
    )
    first, later = f"jobs 1-{args.first}", f"jobs {args.first + 1}+"
    print(
        f"{'arm':<16} {first:>9} {later:>9} {'jobs $':>8} "
        f"{'sessions':>8} {'sessions $':>10} {'warm returns':>12}"
    )
    for arm in arms:
        print(
            f"{arm.name:<16} {arm.first_jobs:>9} {arm.later_jobs:>9} ${arm.job_usd:>7.3f} "
            f"{arm.interactive:>8} ${arm.interactive_usd:>9.3f} {arm.warm:>5}/{arm.returns}"
        )
