"""The proxy's keep-alive where it was unguarded (issue 49): its thread sleeps until the next
keep-alive is due while a pause is held (it never spins a core through the pause); a
conversation keeps its latest 20 pause lengths as the rule's history; and the status page
shows the dollars spent and saved rounded to the micro-dollar.

Wire shapes as `test_proxy_keepalive`: Anthropic "Messages > Create a Message" through the
official SDK, its usage (`cache_read_input_tokens`, `cache_creation_input_tokens`), reads
at 0.1x, 5-minute writes at 1.25x."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx2

from tests.proxy.test_proxy_keepalive import (
    FOLLOW_UP,
    INTERVAL,
    MESSAGES,
    START,
    Clock,
    Upstream,
    ask,
    keeping,
)
from tests.support.thread_frames import GIVE_UP, waiting_in
from tests.support.wire_servers import WireServer
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost
from warmloop.facts.usage import Usage
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import HISTORY, Caps
from warmloop.proxy.server import Proxy
from warmloop.proxy.status import STATUS_PATH


def sleeping_for(thread: threading.Thread) -> float | None:
    """The seconds `thread` waits on its condition for (inf: until notified), or None
    while it is not waiting (running, or spinning through the pause)."""
    frame = waiting_in(thread, "wait")
    if frame is None:
        return None
    timeout = frame.f_locals.get("timeout")
    return float("inf") if timeout is None else float(timeout)


def test_the_keep_alive_thread_sleeps_until_the_keep_alive_is_due(
    wire_server: WireServer,
) -> None:
    upstream, clock = Upstream(), Clock()
    wire_server.serve(upstream)
    proxy = Proxy(wire_server.url, None, clock=clock, fixes=Fixes(), keepalive=Caps())
    with proxy.start():
        (thread,) = [t for t in threading.enumerate() if t.name == "warmloop-keepalive"]
        ask(proxy, MESSAGES)  # a pause starts; the first keep-alive is due in 270 s
        deadline = time.monotonic() + GIVE_UP
        while sleeping_for(thread) != INTERVAL:  # it spins instead: never there
            assert time.monotonic() < deadline, "the thread never slept until the keep-alive"
            time.sleep(0.01)
        clock.now += INTERVAL / 2  # the test's clock moved: it looks again, sleeps the rest
        assert proxy.keepalives is not None
        proxy.keepalives.wake()
        while sleeping_for(thread) != INTERVAL / 2:
            assert time.monotonic() < deadline, "the thread never slept the rest of the wait"
            time.sleep(0.01)
    assert len(upstream.bodies) == 1  # nothing was due


def test_a_conversation_keeps_its_latest_twenty_pauses_as_the_rules_history(
    wire_server: WireServer,
) -> None:
    upstream, clock = Upstream(), Clock()
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        messages: list[Any] = list(MESSAGES)
        ask(proxy, messages)
        for n in range(HISTORY + 2):  # pauses of 10 s, 11 s, ... : each shorter than one TTL
            clock.now += 10.0 + n
            messages += [
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": f"{n}"},
            ]
            ask(proxy, messages)
        (conversation,) = proxy.status()["by_conversation"]
        history = keepalives.tally(conversation["id"]).history
    assert HISTORY == 20
    assert history == [10.0 + n for n in range(2, 22)]


PREFIX = 20_003
"""A prompt whose cached reads cost a fraction of a micro-dollar (0.3 $/M per token)."""


def upstream_of(prefix: int) -> Any:
    """Anthropic Messages answering with a `prefix`-token cache: written by the first
    request, read by each keep-alive (`max_tokens` 1) and follow-up."""
    bodies: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        first, ping = len(bodies) == 1, body["max_tokens"] == 1
        usage = {
            "input_tokens": 10,
            "cache_read_input_tokens": 0 if first else prefix,
            "cache_creation_input_tokens": prefix if first else (0 if ping else 40),
            "output_tokens": 1 if ping else 5,
        }
        message = {"id": f"msg_{len(bodies)}", "type": "message", "role": "assistant"}
        content = [{"type": "text", "text": "ok"}]
        return httpx2.Response(
            200,
            json={
                **message,
                "model": "claude-sonnet-4-6",
                "content": content,
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": usage,
            },
        )

    return answer


def test_the_status_page_shows_dollars_spent_and_saved_to_the_micro_dollar(
    wire_server: WireServer,
) -> None:
    clock = Clock()
    with keeping(wire_server, upstream_of(PREFIX), clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        for n in range(1, 5):  # a 20-minute tool: four keep-alives carry the cache through
            clock.now = START + n * INTERVAL
            assert keepalives.tick() == 1
        clock.now = START + 1200
        ask(proxy, FOLLOW_UP)
        (row,) = httpx2.get(f"{proxy.url}{STATUS_PATH}").json()["by_conversation"]
    prices = prices_for("anthropic:claude-sonnet-4-6")
    assert prices is not None
    ping = cost(Usage(input_tokens=10 + PREFIX, cache_read_tokens=PREFIX, output_tokens=1), prices)
    miss = cost(Usage(input_tokens=round((1.25 - 0.1) * (PREFIX + 10))), prices)  # the rule's
    spent, saved = 4 * ping, miss - 4 * ping
    assert (round(spent, 7), round(saved, 7)) == (0.0241836, 0.0448614)  # finer than 1e-6
    assert row["keepalives"] == 4
    assert row["keepalive_usd"] == round(spent, 6) == 0.024184
    assert row["keepalive_saved_usd"] == round(saved, 6) == 0.044861
