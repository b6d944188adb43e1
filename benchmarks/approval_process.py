"""An approval across processes, priced (issue 47, must-show 2): a run asks to deploy (a tool
marked `needs_approval`), waits, and its process exits; another process keeps the waiting
session warm while a person takes twenty minutes (a faked clock), then approves and
resumes it; the resumed request reads the cache. Done twice, with and without the keep-alive,
so the keep-alive's cost is printed against the miss it avoided.

Both processes talk to a loopback Messages API in the benchmark's process, through the
official Anthropic SDK; its clock is faked (the approving process moves it, `POST /clock`),
and every answer's usage comes from the cache simulator at that clock under Sonnet 4.6's
rules (5m), its blocks as `benchmarks.simulated_provider` cuts them. The session is a SQLite
file both processes open.

    python -m benchmarks approval [--minutes 20]

which starts its two processes as `python -m benchmarks approval ask --url URL --store PATH`
and `python -m benchmarks approval approve --url URL --store PATH --call ID [--minutes 20]
[--no-keepalive]`. `python -m benchmarks subagents` prints it too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.simulated_provider import blocks
from warmloop import Agent, KeepAlivePolicy, WaitingForApproval, tool
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import profile_for
from warmloop.facts.usage import Usage
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.simulate import CacheSimulator, SimRequest

MODEL = "claude-sonnet-4-6"
SPEC = f"anthropic:{MODEL}"
SESSION = "release-2-1"
INSTRUCTIONS = "You release what was reviewed, and deploy only with a person's approval. " * 600
GRACE = 2.0
"""Real seconds the approving process gives its pinger to act after the clock moved (only
an upper bound; it goes on as soon as the pinger is asleep again)."""
STEP = 10.0
"""Faked seconds the clock moves at a time: less than the keep-alive's margin, so a
keep-alive goes out before the entry would expire."""
ROOT = Path(__file__).resolve().parents[1]


@tool(needs_approval=True)
def deploy(version: str) -> str:
    """Deploy a version to production.

    Args:
        version: The version to deploy.
    """
    return f"{version} is live"


@dataclass
class Api:
    """The loopback Messages API: a faked clock, the cache simulator, and what it billed."""

    now: float = 0.0
    cache: CacheSimulator = field(default_factory=lambda: CacheSimulator(profile_for(SPEC)))
    billed: list[tuple[float, bool, Usage]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        keepalive = body.get("max_tokens") == 1
        with self.lock:
            usage = self.cache.request(SimRequest(self.now, blocks(body), 1 if keepalive else 40))
            self.billed.append((self.now, keepalive, usage))
        last = body["messages"][-1]["content"]
        answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
        if keepalive:
            content: list[dict[str, Any]] = [{"type": "text", "text": "."}]
        elif answered:
            content = [{"type": "tool_use", "id": "toolu_2", "name": "submit",
                        "input": {"answer": "2.1 released"}}]  # fmt: skip
        else:
            content = [{"type": "tool_use", "id": "toolu_1", "name": "deploy",
                        "input": {"version": "2.1"}}]  # fmt: skip
        return {
            "id": f"msg_{len(self.billed)}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": "end_turn" if keepalive else "tool_use",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_read_input_tokens": usage.cache_read_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
                "output_tokens": usage.output_tokens,
            },
        }


@contextmanager
def serving(api: Api) -> Iterator[str]:
    """The API on a loopback port (HTTP/1.1 keep-alive); its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.reply({"now": api.now})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/clock":
                api.now += float(body["advance"])
                self.reply({"now": api.now})
            else:
                self.reply(api.answer(body))

        def reply(self, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class SharedClock:
    """The API's faked clock, as a keep-alive policy reads and sleeps on it: a sleep
    registers its wake-up, and `advance` moves the API's clock and wakes who is due."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def clock(self) -> float:
        with urllib.request.urlopen(f"{self.url}/clock", timeout=30) as response:
            return float(json.loads(response.read())["now"])

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self.sleepers.append((self.clock() + seconds, future))
        await future

    def advance(self, seconds: float) -> None:
        request = urllib.request.Request(
            f"{self.url}/clock",
            data=json.dumps({"advance": seconds}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            now = float(json.loads(response.read())["now"])
        for wake, future in list(self.sleepers):
            if wake <= now:
                self.sleepers.remove((wake, future))
                if not future.done():
                    future.set_result(None)

    def policy(self) -> KeepAlivePolicy:
        return KeepAlivePolicy(clock=self.clock, sleep=self.sleep)


def agent(url: str, keepalive: KeepAlivePolicy | None) -> Agent:
    model = AnthropicModel(MODEL, base_url=url, api_key="sk-ant-bench", max_retries=0)
    return Agent(model, [deploy], instructions=INSTRUCTIONS, keepalive=keepalive)


async def ask(url: str, store: Path) -> str:
    """The first process: the run, until it waits; the call's id."""
    try:
        await agent(url, None).run("Release 2.1.", session=SESSION, store=store)
    except WaitingForApproval as waiting:
        return waiting.interruptions[0].id
    raise RuntimeError("the run did not wait for approval")


async def approve(url: str, store: Path, call_id: str, minutes: float, keep: bool) -> None:
    """The second process: keeps the session warm while a person takes `minutes`, then
    approves and resumes it."""
    shared = SharedClock(url)
    approver = agent(url, shared.policy() if keep else None)
    left = minutes * 60.0
    async with approver.waiting(SESSION, store=store, since=0.0) as wait:
        while left > 0:
            step = min(left, STEP)
            shared.advance(step)
            left -= step
            if keep:
                await settled(shared, lambda: len(wait.maintenance))
    await approver.resume(SESSION, approvals={call_id: True}, store=store)


async def settled(shared: SharedClock, sent: Callable[[], int]) -> None:
    """Let the pinger act on the clock's move: until it sleeps again, or sent one, or
    GRACE passes (it stopped: the rule let the cache go)."""
    before = sent()
    deadline = asyncio.get_running_loop().time() + GRACE
    while asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
        if shared.sleepers or sent() > before:
            return


@dataclass(frozen=True)
class Outcome:
    """What the approving process's keep-alives and resumed request were billed."""

    pings: int
    ping_dollars: float
    resumed: Usage
    resumed_dollars: float
    prompt: int
    """The waiting request's prompt, in tokens."""


def flow(minutes: float, keep: bool) -> Outcome:
    """Both processes, one after the other, against a fresh API; what the second did."""
    api = Api()
    prices = prices_for(SPEC)
    assert prices is not None
    with serving(api) as url, tempfile.TemporaryDirectory() as directory:
        store = Path(directory) / "sessions.db"
        asked = process("ask", "--url", url, "--store", str(store))
        options = ["--minutes", str(minutes)] + ([] if keep else ["--no-keepalive"])
        process("approve", "--url", url, "--store", str(store), "--call", asked, *options)
    pings = [(at, usage) for at, ka, usage in api.billed if ka]
    _, _, resumed = api.billed[-1]  # the resumed run's one request (its answer submits)
    return Outcome(
        len(pings),
        sum(cost_breakdown(u, prices).total for _, u in pings),
        resumed,
        cost_breakdown(resumed, prices).total,
        api.billed[0][2].prompt_tokens,
    )


def process(*argv: str) -> str:
    """Run this module as its own process; what it printed."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "approval", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed:\n{done.stderr}")
    return done.stdout.strip()


def demonstrate(say: Callable[[str], None], minutes: float = 20.0) -> None:
    """Must-show 2, printed."""
    kept, cold = flow(minutes, True), flow(minutes, False)
    say(
        f"An approval, {minutes:g} minutes later in another process ({MODEL}, 5m cache, "
        f"a {kept.prompt:,}-token prompt waiting):"
    )
    say(
        f"  kept warm: {kept.pings} keep-alives ${kept.ping_dollars:.4f}; the resumed request "
        f"read {kept.resumed.cache_read_tokens:,} tokens, wrote {kept.resumed.cache_write_tokens:,}"
        f" (${kept.resumed_dollars:.4f})"
    )
    say(
        f"  let go:    the resumed request read {cold.resumed.cache_read_tokens:,} tokens, "
        f"wrote {cold.resumed.cache_write_tokens:,} (${cold.resumed_dollars:.4f})"
    )
    avoided = cold.resumed_dollars - kept.resumed_dollars
    say(
        f"  the keep-alives cost ${kept.ping_dollars:.4f} against the ${avoided:.4f} miss they "
        f"avoided (net ${avoided - kept.ping_dollars:.4f} saved)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("step", nargs="?", choices=["ask", "approve"])
    parser.add_argument("--url", default="")
    parser.add_argument("--store", type=Path)
    parser.add_argument("--call", default="")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--no-keepalive", action="store_true")
    args = parser.parse_args(argv)
    if args.step is None:
        demonstrate(print, args.minutes)
    elif args.step == "ask":
        print(asyncio.run(ask(args.url, args.store)))
    else:
        keep = not args.no_keepalive
        asyncio.run(approve(args.url, args.store, args.call, args.minutes, keep))
