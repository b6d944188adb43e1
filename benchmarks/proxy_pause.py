"""A pause through `warmloop proxy`: keep-alives sent and the session's cost with and without
them, priced by the cache simulator (issue 34, must-show 2).

A framework-like agent (the official Anthropic SDK, a scripted tool loop) works through
`warmloop proxy` (breakpoints on, as the CLI starts it) against a loopback Messages API
whose every answer's usage comes from `warmloop.simulate` under claude-sonnet-4-6's cache
rules, on a faked clock: its first request asks for a tool, the tool "sleeps" past the
5-minute TTL (`--tool-minutes`), the second request carries its result, then the user comes
back with a follow-up after `--away-minutes`. The same session runs twice: with the proxy's
keep-alive on (the default caps; a request written for an hour where the conversation's
earlier pauses say it pays) and with `--no-keepalive`. The clock moves only from one
keep-alive's due moment to the next (`KeepAlives.due`, `tick`), so nothing waits.

    python -m benchmarks proxy_pause [--tool-minutes 12 --away-minutes 20 --system-tokens 20000]
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import anthropic

from benchmarks.simulated_provider import blocks
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost_breakdown
from warmloop.facts.profiles import profile_for
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import Caps
from warmloop.proxy.server import Proxy
from warmloop.simulate import CacheSimulator, SimRequest, summary
from warmloop.simulate import SimOutcome as Outcome

MODEL = "claude-sonnet-4-6"
SPEC = f"anthropic:{MODEL}"
TOOLS: Any = [
    {
        "name": "run_tests",
        "description": "Run the project's test suite and report the failures.",
        "input_schema": {"type": "object", "properties": {}},
    }
]
HANG_GUARD = 60.0


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Upstream:
    """The loopback Messages API: each request's usage from the simulator, at the clock."""

    clock: Clock
    simulator: CacheSimulator = field(default_factory=lambda: CacheSimulator(profile_for(SPEC)))
    outcomes: list[Outcome] = field(default_factory=list)
    keepalives: int = 0
    hour: int = 0
    """Requests (keep-alives aside) written for an hour (`cache_control.ttl` `1h`)."""

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        ping = body.get("max_tokens") == 1
        self.keepalives += ping
        output = 1 if ping else 60
        request = SimRequest(self.clock(), blocks(body), output)
        self.hour += not ping and any(b.breakpoint == "1h" for b in request.blocks)
        usage = self.simulator.request(request)
        prices = prices_for(SPEC)
        assert prices is not None
        self.outcomes.append(Outcome(request.at, usage, cost_breakdown(usage, prices)))
        last = body["messages"][-1]["content"]
        tool_result = isinstance(last, list) and last[0].get("type") == "tool_result"
        first = len(body["messages"]) == 1
        content: list[dict[str, Any]] = (
            [{"type": "tool_use", "id": "toolu_1", "name": "run_tests", "input": {}}]
            if first
            else [{"type": "text", "text": "2 tests failed." if tool_result else "Fixed."}]
        )
        return {
            "id": f"msg_{len(self.outcomes)}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": "tool_use" if first else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.uncached_tokens,  # Anthropic's: the uncached part
                "cache_read_input_tokens": usage.cache_read_tokens,
                "cache_creation_input_tokens": usage.cache_write_tokens,
                "output_tokens": usage.output_tokens,
            },
        }


class Answering(Protocol):
    """A loopback API's answers: a response body for each request body."""

    def answer(self, body: dict[str, Any]) -> dict[str, Any]: ...


@contextmanager
def serving(upstream: Answering) -> Iterator[str]:
    """Serve `upstream`'s answers on a loopback port (JSON, HTTP/1.1 keep-alive); its URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(upstream.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class Arm:
    name: str
    requests: int
    keepalives: int
    hour: int
    dollars: float
    status_saved: float | None


def session(args: argparse.Namespace, keepalive: bool) -> Arm:
    """The scripted session through the proxy, with its keep-alive on or off."""
    clock = Clock()
    upstream = Upstream(clock)
    caps = Caps() if keepalive else None
    with serving(upstream) as url:
        proxy = Proxy(url, None, clock=clock, fixes=Fixes(), keepalive=caps, tick_thread=False)
        with proxy.start():
            client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-bench", max_retries=0)
            system = "You are a careful coding agent; read before you edit. " * (
                args.system_tokens // 13
            )
            messages: Any = [{"role": "user", "content": "Run the tests and fix what fails."}]

            def ask() -> Any:
                before = proxy.handled
                reply = client.messages.create(
                    model=MODEL, max_tokens=1024, system=system, tools=TOOLS, messages=messages
                )
                assert proxy.wait_handled(before + 1, HANG_GUARD)
                return reply

            def idle(seconds: float) -> None:
                end = clock.now + seconds
                while proxy.keepalives is not None:
                    due = proxy.keepalives.due()
                    if due is None or due >= end:
                        break
                    clock.now = max(clock.now, due)
                    proxy.keepalives.tick()
                clock.now = end

            reply = ask()
            idle(args.tool_minutes * 60)  # the tool runs
            messages += [
                {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "2 failed"}
                    ],
                },
            ]
            reply = ask()
            idle(args.away_minutes * 60)  # the user is away
            messages += [
                {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
                {"role": "user", "content": "Fix them."},
            ]
            ask()
            page = proxy.status()
    total = summary(upstream.outcomes).dollars
    assert total is not None
    return Arm(
        "keep-alive on" if keepalive else "--no-keepalive",
        len(upstream.outcomes) - upstream.keepalives,
        upstream.keepalives,
        upstream.hour,
        total,
        page.get("keepalive_saved_usd"),
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool-minutes", type=float, default=12.0)
    parser.add_argument("--away-minutes", type=float, default=20.0)
    parser.add_argument("--system-tokens", type=int, default=20_000)
    args = parser.parse_args(argv)
    on, off = session(args, True), session(args, False)
    print(
        f"{MODEL}, a {args.system_tokens:,}-token system prompt; a tool of "
        f"{args.tool_minutes:g} min, then a follow-up after {args.away_minutes:g} min "
        "(priced by warmloop.simulate)"
    )
    print(f"{'arm':<16} {'requests':>8} {'written 1h':>10} {'keep-alives':>11} {'cost':>9}")
    for arm in (on, off):
        print(
            f"{arm.name:<16} {arm.requests:>8} {arm.hour:>10} {arm.keepalives:>11} "
            f"${arm.dollars:>8.4f}"
        )
    saved = off.dollars - on.dollars
    print(
        f"keep-alive saved ${saved:.4f} ({saved / off.dollars:.0%} of the session without it); "
        f"the proxy's --status counted ${on.status_saved:.4f} of it to the keep-alives"
    )
