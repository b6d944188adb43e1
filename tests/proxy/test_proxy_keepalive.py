"""The proxy's keep-alive (issue 34): during a pause in a conversation it makes the agent's
priced decision (`keepalive.rule`), re-sends the last request as it went upstream with the
smallest answer and the client's own key, within its spend caps, and forgets the key when
the pause ends. A fake clock and `tick()`; no sleeps.

Wire shapes: Anthropic "Messages > Create a Message" (`usage.cache_read_input_tokens`,
`cache_creation_input_tokens`; "Prompt caching > Pricing": reads 0.1x, 5-minute writes
1.25x, a 5-minute TTL refreshed by each read); OpenAI "Responses > Create a response"
(`prompt_cache_options.prewarm`, `usage.input_tokens_details.cached_tokens`)."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from click.testing import CliRunner
from openai import OpenAI

from tests.support.wire_servers import WireServer
from warmloop.cli.main import main
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost
from warmloop.facts.profiles import profile_for
from warmloop.facts.usage import Usage
from warmloop.keepalive.rule import pause_costs, ping_limit
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.keepalive import Caps
from warmloop.proxy.server import Proxy
from warmloop.proxy.status import STATUS_PATH

KEY = "sk-ant-secret-0123456789"
PREFIX = 20_000
"""The conversation's prompt, in tokens, as the upstream reports it."""
START = 1_800_000_000.0
INTERVAL = 270.0
"""Claude's 5-minute TTL less the 30 s margin (`keepalive.rule.margin`)."""


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


class Upstream:
    """Answers Anthropic Messages: a first request writes the prefix, a keep-alive
    (`max_tokens` 1) and a follow-up read it; keeps each body and its credentials (the SDK
    sends the key as `Authorization: Bearer`)."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.keys: list[str | None] = []
        self.status = status
        self.pinged = threading.Event()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        self.keys.append(request.headers.get("authorization"))
        ping = body["max_tokens"] == 1
        if ping:
            self.pinged.set()
            if self.status != 200:
                return httpx2.Response(self.status, json={"type": "error", "error": {}})
        first = len(self.bodies) == 1
        usage = {
            "input_tokens": 10,
            "cache_read_input_tokens": 0 if first else PREFIX,
            "cache_creation_input_tokens": PREFIX if first else (0 if ping else 40),
            "output_tokens": 1 if ping else 5,
        }
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(self.bodies)}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": usage,
            },
        )


MESSAGES: Any = [{"role": "user", "content": "Run the test suite and fix what fails."}]
FOLLOW_UP: Any = [
    *MESSAGES,
    {"role": "assistant", "content": "ok"},
    {"role": "user", "content": "The suite is done: 2 failed."},
]


HANG_GUARD = 600.0  # only against a hang: a loaded machine never reaches it
"""Seconds to wait for the proxy to file an answer the client already has (a hang guard
only: it comes at once)."""


def ask(proxy: Proxy, messages: Any, system: str = "Be terse.") -> None:
    """One request through the proxy, waited on until the proxy has filed its answer (and
    started its pause)."""
    client = anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0)
    before = proxy.handled
    client.messages.create(
        model="claude-sonnet-4-6", max_tokens=512, system=system, messages=messages
    )
    assert proxy.wait_handled(before + 1, HANG_GUARD)


def keeping(wire_server: WireServer, upstream: Upstream, clock: Clock, **options: Any) -> Proxy:
    wire_server.serve(upstream)
    caps = options.pop("caps", Caps())
    return Proxy(
        wire_server.url,
        options.pop("out", None),
        clock=clock,
        fixes=Fixes(),
        keepalive=caps,
        tick_thread=False,
        **options,
    ).start()


def test_a_pause_past_the_ttl_is_kept_warm_and_what_it_saved_is_shown(
    wire_server: WireServer,
) -> None:
    upstream, clock = Upstream(), Clock()
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        clock.now += INTERVAL - 1
        assert keepalives.tick() == 0  # not due yet
        for n in range(1, 5):  # the tool runs 20 minutes: pings at 270, 540, 810, 1080 s
            clock.now = START + n * INTERVAL
            assert keepalives.tick() == 1
        clock.now = START + 1200
        ask(proxy, FOLLOW_UP)
        page = httpx2.get(f"{proxy.url}{STATUS_PATH}").json()
        printed = CliRunner().invoke(
            main, ["proxy", "--status", "--port", str(proxy.server.server_address[1])]
        )
    first, *pings, follow_up = upstream.bodies
    assert len(pings) == 4
    for ping in pings:  # the request as it went upstream, breakpoints and all; one token
        assert ping == {**first, "max_tokens": 1}
    assert follow_up["messages"][-1]["content"][0]["text"] == "The suite is done: 2 failed."
    assert upstream.keys == [f"Bearer {KEY}"] * 6
    prices = prices_for("anthropic:claude-sonnet-4-6")
    assert prices is not None
    ping_usd = cost(
        Usage(input_tokens=10 + PREFIX, cache_read_tokens=PREFIX, output_tokens=1), prices
    )
    prompt = PREFIX + 10  # the first request's prompt, all cacheable
    miss = 1.25 * prompt - 0.1 * prompt  # the rule's miss, in base-input tokens
    miss_usd = cost(Usage(input_tokens=round(miss)), prices)
    (row,) = page["by_conversation"]
    assert row["keepalives"] == 4
    assert row["keepalive_usd"] == pytest.approx(4 * ping_usd, abs=1e-6)
    assert row["keepalive_saved_usd"] == pytest.approx(miss_usd - 4 * ping_usd, abs=1e-6)
    assert page["keepalives"] == 4
    assert printed.exit_code == 0, printed.output
    assert "4 keep-alives" in printed.output


def test_the_clients_key_is_held_only_for_the_pause_and_never_logged_or_written(
    wire_server: WireServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    upstream, clock, out = Upstream(), Clock(), tmp_path / "requests.jsonl"
    with keeping(wire_server, upstream, clock, out=out) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        (conversation,) = proxy.status()["by_conversation"]
        assert keepalives.holds(conversation["id"])
        clock.now += INTERVAL
        assert keepalives.tick() == 1
        clock.now += 3600  # past the conversation's idle hour: forgotten, key and all
        assert keepalives.tick() == 0
        assert not keepalives.holds(conversation["id"])
    assert len(upstream.bodies) == 2
    assert KEY not in out.read_text()
    assert KEY not in caplog.text
    assert KEY not in capsys.readouterr().err


def test_a_refused_keep_alive_ends_the_pause(
    wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream, clock = Upstream(status=401), Clock()
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        (conversation,) = proxy.status()["by_conversation"]
        clock.now += INTERVAL
        assert keepalives.tick() == 0
        assert not keepalives.holds(conversation["id"])
        clock.now += INTERVAL
        assert keepalives.tick() == 0
    assert len(upstream.bodies) == 2  # the request and the refused keep-alive only
    assert "failed (the upstream answered 401); no more in this pause" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("caps", "why"),
    [
        (Caps(conversation_usd=0.001), "would pass the $0.00 cap"),
        (Caps(daily_usd=0.001), "would pass the $0.00 daily cap"),
    ],
)
def test_a_keep_alive_past_a_spend_cap_is_not_sent(
    wire_server: WireServer, capsys: pytest.CaptureFixture[str], caps: Caps, why: str
) -> None:
    upstream, clock = Upstream(), Clock()
    with keeping(wire_server, upstream, clock, caps=caps) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        clock.now += INTERVAL
        assert keepalives.tick() == 0
    assert len(upstream.bodies) == 1
    assert why in capsys.readouterr().err


def test_the_daily_cap_counts_every_conversations_keep_alives(wire_server: WireServer) -> None:
    upstream, clock = Upstream(), Clock()
    prices = prices_for("anthropic:claude-sonnet-4-6")
    assert prices is not None
    one = cost(Usage(input_tokens=10 + PREFIX, cache_read_tokens=PREFIX, output_tokens=1), prices)
    # one keep-alive a day, whichever conversation (none kept for those that come back)
    caps = Caps(daily_usd=1.5 * one, unproven_share=1.0)
    with keeping(wire_server, upstream, clock, caps=caps) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        ask(proxy, [{"role": "user", "content": "Another task."}], system="You review code.")
        assert proxy.status()["conversations"] == 2
        clock.now += INTERVAL
        assert keepalives.tick() == 1


def test_no_keep_alive_where_the_cache_lives_for_hours(wire_server: WireServer) -> None:
    bodies: list[dict[str, Any]] = []

    def chat(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(
            200,
            json={
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": "deepseek-chat",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": PREFIX, "completion_tokens": 1, "total_tokens": 1},
            },
        )

    clock = Clock()
    wire_server.serve(chat)
    proxy = Proxy(wire_server.url, None, clock=clock, keepalive=Caps(), tick_thread=False)
    with proxy.start():
        client = OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
        client.chat.completions.create(  # DeepSeek's disk cache: hours, never pinged
            model="deepseek-chat", messages=[{"role": "user", "content": "hello"}]
        )
        assert proxy.wait_handled(1, HANG_GUARD)
        assert proxy.keepalives is not None
        clock.now += 280
        assert proxy.keepalives.tick() == 0
        assert proxy.keepalives.due() is None
    assert len(bodies) == 1


def test_no_keep_alive_for_a_model_without_prices(wire_server: WireServer) -> None:
    upstream, clock = Upstream(), Clock()
    with keeping(wire_server, upstream, clock) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0)
        client.messages.create(  # Claude's 5-minute cache, but nothing to price it with
            model="claude-private-finetune", max_tokens=512, messages=MESSAGES
        )
        assert proxy.wait_handled(1, HANG_GUARD)
        assert proxy.keepalives is not None
        clock.now += INTERVAL
        assert proxy.keepalives.tick() == 0
    assert len(upstream.bodies) == 1


def test_a_model_that_prewarms_is_kept_warm_without_an_answer(wire_server: WireServer) -> None:
    bodies: list[dict[str, Any]] = []

    def responses(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        return httpx2.Response(
            200,
            json={
                "id": f"resp_{len(bodies)}",
                "object": "response",
                "created_at": 0,
                "status": "completed",
                "model": "gpt-5.6",
                "output": [],
                "usage": {
                    "input_tokens": PREFIX,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 0,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": PREFIX,
                },
            },
        )

    clock = Clock()
    wire_server.serve(responses)
    proxy = Proxy(wire_server.url, None, clock=clock, keepalive=Caps(), tick_thread=False)
    with proxy.start():
        client = OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
        client.responses.create(
            model="gpt-5.6", input="Summarise the design.", max_output_tokens=900
        )
        assert proxy.wait_handled(1, HANG_GUARD)
        assert proxy.keepalives is not None
        clock.now += 1740  # GPT-5.6's 30-minute TTL less the 60 s margin
        assert proxy.keepalives.tick() == 1
    first, ping = bodies
    assert ping == {**first, "prompt_cache_options": {"prewarm": True}}


def test_the_thread_sends_a_keep_alive_when_it_is_due(wire_server: WireServer) -> None:
    upstream, clock = Upstream(), Clock()
    wire_server.serve(upstream)
    proxy = Proxy(wire_server.url, None, clock=clock, fixes=Fixes(), keepalive=Caps())
    with proxy.start():
        ask(proxy, MESSAGES)
        assert proxy.keepalives is not None
        clock.now += INTERVAL
        proxy.keepalives.wake()
        assert upstream.pinged.wait(60)  # a hang guard only: it comes as soon as woken
    assert upstream.bodies[1]["max_tokens"] == 1


def test_without_keep_alive_nothing_is_held_or_sent(wire_server: WireServer) -> None:
    upstream, clock = Upstream(), Clock()
    wire_server.serve(upstream)
    with Proxy(wire_server.url, None, clock=clock, fixes=Fixes()).start() as proxy:
        ask(proxy, MESSAGES)
        assert proxy.keepalives is None
        assert "keepalives" not in proxy.status()
    assert len(upstream.bodies) == 1


def test_the_proxy_stops_pinging_where_the_rule_stops(wire_server: WireServer) -> None:
    upstream, clock = Upstream(), Clock()
    prices = prices_for("anthropic:claude-sonnet-4-6")
    assert prices is not None
    ratio = prices.rates.output / prices.rates.input
    costs = pause_costs(profile_for("anthropic:claude-sonnet-4-6"), PREFIX + 10, output_ratio=ratio)
    assert costs is not None
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        sent = 0
        for n in range(1, 30):  # a tool that never ends
            clock.now = START + n * costs.interval
            sent += keepalives.tick()
    assert sent == ping_limit(costs) == costs.pings_paid_for > 1


def test_a_forgotten_conversation_takes_its_key_with_it(wire_server: WireServer) -> None:
    upstream, clock = Upstream(), Clock()
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives, conversations = proxy.keepalives, proxy.conversations
        assert keepalives is not None
        assert conversations is not None
        conversations.limit = 1
        ask(proxy, MESSAGES)
        (first,) = proxy.status()["by_conversation"]
        assert keepalives.holds(first["id"])
        ask(proxy, [{"role": "user", "content": "Another task."}], system="You review code.")
        assert not keepalives.holds(first["id"])  # the least recent, forgotten past the limit


def test_a_pause_past_the_idle_hour_is_dropped_even_where_the_rule_goes_on(
    wire_server: WireServer,
) -> None:
    upstream, clock = Upstream(), Clock()
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        keepalives.idle_seconds = 2 * INTERVAL  # the rule would ping eleven times
        ask(proxy, MESSAGES)
        (conversation,) = proxy.status()["by_conversation"]
        clock.now = START + INTERVAL
        assert keepalives.tick() == 1
        clock.now = START + 2 * INTERVAL
        assert keepalives.tick() == 0
        assert not keepalives.holds(conversation["id"])


def test_a_key_in_the_query_is_dropped_with_the_pause(wire_server: WireServer) -> None:
    """Gemini takes its key as `?key=` too ("Gemini API reference > API keys"): held in the
    pause's URL, dropped with its headers."""

    def gemini(request: httpx2.Request) -> httpx2.Response:
        usage = {"promptTokenCount": PREFIX, "candidatesTokenCount": 1, "totalTokenCount": 1}
        return httpx2.Response(
            200,
            json={
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": "ok"}]}, "index": 0}
                ],
                "usageMetadata": usage,
            },
        )

    clock = Clock()
    wire_server.serve(gemini)
    proxy = Proxy(wire_server.url, None, clock=clock, keepalive=Caps(), tick_thread=False)
    with proxy.start():
        sent = httpx2.post(
            f"{proxy.url}/v1beta/models/gemini-2.5-flash:generateContent?key={KEY}",
            json={"contents": [{"role": "user", "parts": [{"text": "Summarise the design."}]}]},
        )
        assert sent.status_code == 200
        assert proxy.wait_handled(1, HANG_GUARD)
        keepalives = proxy.keepalives
        assert keepalives is not None
        (conversation,) = proxy.status()["by_conversation"]
        assert keepalives.holds(conversation["id"])
        tally = keepalives._tallies[conversation["id"]]  # what it holds between pauses
        assert tally.pause is not None
        assert KEY in str(tally.pause.url)
        keepalives.idle_seconds = INTERVAL  # the pause ends at the next moment
        clock.now += INTERVAL
        assert keepalives.tick() == 0
        assert not keepalives.holds(conversation["id"])
        assert KEY not in str(tally.pause.url)


def test_a_longer_ttl_is_written_where_the_conversations_pauses_say_it_pays(
    wire_server: WireServer,
) -> None:
    """After a 40-minute pause pinged through (eight keep-alives on the 5-minute cache), the
    next request of the conversation is written for an hour ("Prompt caching > 1-hour cache
    duration": `cache_control.ttl` `1h`, writes at 2x), and its pause is kept on the hour's
    clock: one keep-alive at 59 minutes instead of one every 4.5."""
    upstream, clock = Upstream(), Clock()
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        for n in range(1, 9):
            clock.now = START + n * INTERVAL
            assert keepalives.tick() == 1
        clock.now = START + 2400
        ask(proxy, FOLLOW_UP)
        resumed = clock.now
        clock.now = resumed + INTERVAL
        assert keepalives.tick() == 0  # the hour's entry needs none yet
        clock.now = resumed + 3540  # the hour less the 60 s margin
        assert keepalives.tick() == 1
    first, *_, follow_up, ping = upstream.bodies
    assert "ttl" not in json.dumps(first)
    marks = [
        block["cache_control"]
        for block in [*follow_up["system"], *follow_up["messages"][-1]["content"]]
        if "cache_control" in block
    ]
    assert marks
    assert all(mark == {"type": "ephemeral", "ttl": "1h"} for mark in marks)
    assert ping == {**follow_up, "max_tokens": 1}


def test_markers_the_client_placed_keep_their_ttl(wire_server: WireServer) -> None:
    upstream, clock = Upstream(), Clock()
    system: Any = [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]
    with keeping(wire_server, upstream, clock) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        client_marked = anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0)
        for step, messages in enumerate((MESSAGES, FOLLOW_UP)):
            before = proxy.handled
            client_marked.messages.create(
                model="claude-sonnet-4-6", max_tokens=512, system=system, messages=messages
            )
            assert proxy.wait_handled(before + 1, HANG_GUARD)
            if step == 0:  # the same 40-minute pause, pinged through
                for n in range(1, 9):
                    clock.now = START + n * INTERVAL
                    assert keepalives.tick() == 1
                clock.now = START + 2400
    assert "1h" not in json.dumps(upstream.bodies[-1])
    assert upstream.bodies[-1]["system"] == system


def test_conversations_that_never_came_back_spend_only_their_share_of_the_daily_cap(
    wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two new conversations (no pause of their own yet) and a daily cap of 2.5
    keep-alives: half of it is kept for conversations that come back, so one goes out."""
    upstream, clock = Upstream(), Clock()
    prices = prices_for("anthropic:claude-sonnet-4-6")
    assert prices is not None
    one = cost(Usage(input_tokens=10 + PREFIX, cache_read_tokens=PREFIX, output_tokens=1), prices)
    with keeping(wire_server, upstream, clock, caps=Caps(daily_usd=2.5 * one)) as proxy:
        keepalives = proxy.keepalives
        assert keepalives is not None
        ask(proxy, MESSAGES)
        ask(proxy, [{"role": "user", "content": "Another task."}], system="You review code.")
        clock.now += INTERVAL
        assert keepalives.tick() == 1
    assert "conversations that have not come back would pass" in capsys.readouterr().err
