"""One Agent under a service's load, on every SDK wire: 200 runs at once in one event loop,
and 200 runs from 16 threads (`run_sync`, each thread its own loop).

Issue 45: a model keeps one SDK client per event loop (`providers.loop_clients`), shared by
the loop's runs and closed with the loop. Per wire (Chat Completions through
`openai-compatible:`, Responses through `openai:`, Anthropic Messages, Gemini; each through
its official SDK) one Agent, as an application module holds one, runs both arms against a
loopback server that keeps its connections alive (`tests.support.wire_servers`). Every run
is a lookup and an answer that names the run's own ticket (two requests;
`tests.support.tickets`), so a reply that reached the wrong run counts as an error.

Per arm: runs, errors, requests, the event loops that sent them, the TCP connections the
server accepted (opened) and the most open at once, against the pool size per loop (the
SDK client's `max_connections`); whether every connection was closed once the arm's loops
had ended; and the arm's seconds (loopback, this machine's load: for scale only). It exits
1 when a run fails, an answer is another run's, or more connections were open at once than
the loops' pools allow. Connections opened over the arm can pass the pool size where a
burst outgrows what the SDK's pool keeps alive between requests (google-genai's keeps 20 of
its 100; openai's and anthropic's 100 of 1000): each such arm is named.

    python -m benchmarks concurrency
    python -m benchmarks concurrency --runs 400 --threads 32 --wire anthropic
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import anthropic
import openai

from tests.support.tickets import answer_for, answered, lookup, task
from tests.support.wire_servers import WireServer, by_request, connect, serving
from warmloop import Agent, Run

RUNS = 200
THREADS = 16
WIRES = {
    "chat": "openai-compatible",
    "responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
}
"""Wire -> the selection prefix that speaks it."""
OPENAI_POOL = openai.DEFAULT_CONNECTION_LIMITS.max_connections or 0
ANTHROPIC_POOL = anthropic.DEFAULT_CONNECTION_LIMITS.max_connections or 0
POOL = {
    "chat": OPENAI_POOL,
    "responses": OPENAI_POOL,
    "anthropic": ANTHROPIC_POOL,
    "gemini": 100,  # google-genai's async client takes httpx's default pool (100, 20 kept)
}
"""Wire -> the most connections one SDK client's pool opens at once (both SDKs set 1000)."""

Outcomes = list["Run | BaseException"]


@dataclass(frozen=True)
class Arm:
    """One arm's figures (see the module docstring)."""

    wire: str
    pattern: str
    runs: int
    errors: int
    requests: int
    loops: int
    opened: int
    most_open: int
    pool: int
    closed: bool
    seconds: float

    @property
    def answered(self) -> bool:
        """Every run answered its own task."""
        return self.errors == 0

    @property
    def within_pools(self) -> bool:
        """No more connections open at once than the loops' pools allow."""
        return self.most_open <= self.loops * self.pool

    @property
    def opened_within_pools(self) -> bool:
        """No more connections opened over the arm than the loops' pools hold."""
        return self.opened <= self.loops * self.pool


def one_loop(agent: Agent, runs: int, threads: int) -> tuple[Outcomes, int]:
    """`runs` runs at once in one event loop."""

    async def all_at_once() -> Outcomes:
        started = (agent.run(task(n)) for n in range(runs))
        return list(await asyncio.gather(*started, return_exceptions=True))

    return asyncio.run(all_at_once()), 1


def from_threads(agent: Agent, runs: int, threads: int) -> tuple[Outcomes, int]:
    """`runs` runs from `threads` threads, `run_sync` in each: each thread one loop."""
    used: set[int] = set()

    def one(n: int) -> Run | BaseException:
        used.add(threading.get_ident())
        try:
            return agent.run_sync(task(n))
        except Exception as exc:  # counted, not raised: every run is accounted for
            return exc

    with ThreadPoolExecutor(threads) as pool:
        outcomes: Outcomes = list(pool.map(one, range(runs)))
    return outcomes, len(used)


PATTERNS: dict[str, Callable[[Agent, int, int], tuple[Outcomes, int]]] = {
    "one loop": one_loop,
    "threads": from_threads,
}


def errors(outcomes: Outcomes) -> int:
    """Runs that failed, or answered with another run's ticket."""
    wrong = 0
    for n, outcome in enumerate(outcomes):
        if isinstance(outcome, BaseException):
            wrong += 1
            print(f"  run {n}: {type(outcome).__name__}: {outcome}")
        elif answered(outcome) != f"answer {n}":
            wrong += 1
            print(f"  run {n}: answered {answered(outcome)!r}")
    return wrong


def measure(
    wire: str, server: WireServer, agent: Agent, pattern: str, runs: int, threads: int
) -> Arm:
    """Run one arm on `agent` and read the server's counts around it."""
    opened, asked = server.connections, len(server.requests())
    with server.lock:
        server.most_open = server.connections - server.closed
    started = time.perf_counter()
    outcomes, loops = PATTERNS[pattern](agent, runs, threads)
    seconds = time.perf_counter() - started
    return Arm(
        wire,
        pattern,
        runs,
        errors(outcomes),
        len(server.requests()) - asked,
        loops,
        server.connections - opened,
        server.most_open,
        POOL[wire],
        server.wait_closed(),
        seconds,
    )


def run_wire(wire: str, runs: int, threads: int) -> list[Arm]:
    """Both arms on one wire: one Agent, one server."""
    with serving() as server:
        server.serve(by_request(answer_for))
        agent = Agent(connect(server, WIRES[wire]), tools=[lookup])
        return [measure(wire, server, agent, pattern, runs, threads) for pattern in PATTERNS]


def table(arms: Sequence[Arm]) -> str:
    """The figures, one line per arm."""
    head = (
        f"{'wire':<10} {'pattern':<9} {'runs':>5} {'errors':>6} {'requests':>8} {'loops':>5} "
        f"{'opened':>6} {'most open':>9} {'pool/loop':>9} {'closed':>6} {'seconds':>7}"
    )
    lines = [head, "-" * len(head)]
    for a in arms:
        lines.append(
            f"{a.wire:<10} {a.pattern:<9} {a.runs:>5} {a.errors:>6} {a.requests:>8} "
            f"{a.loops:>5} {a.opened:>6} {a.most_open:>9} {a.pool:>9} "
            f"{'yes' if a.closed else 'no':>6} {a.seconds:>7.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="runs per arm (200)")
    parser.add_argument("--threads", type=int, default=THREADS, help="threads' arm (16)")
    parser.add_argument("--wire", choices=WIRES, action="append", help="one wire (repeatable)")
    args = parser.parse_args()
    arms = [arm for wire in args.wire or WIRES for arm in run_wire(wire, args.runs, args.threads)]
    print(table(arms))
    checks = {
        "every run answered its own task": [a for a in arms if not a.answered],
        "connections open at once within the loops' pools": [a for a in arms if not a.within_pools],
        "connections opened within the loops' pools": [
            a for a in arms if not a.opened_within_pools
        ],
    }
    print()
    for check, failing in checks.items():
        names = ", ".join(f"{a.wire} {a.pattern}" for a in failing)
        print(f"{check}: " + (f"no ({names})" if failing else "yes"))
    if any(not a.answered or not a.within_pools for a in arms):
        raise SystemExit(1)
