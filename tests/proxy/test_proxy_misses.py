"""The proxy's live guard names each miss with its dollars, as the audit does (issue 48),
from live traffic sent through the official openai SDK (Responses) to the loopback server,
whose answers report the usage the Responses API documents ("The response object":
`input_tokens`, `input_tokens_details.cached_tokens`):

- `no-cache-key`: GPT-5.6 without `prompt_cache_key` (the upstream is not OpenAI's host, so
  the proxy adds none), warned of once; with the client's key, the same miss is evicted;
- the key the proxy adds on OpenAI's own host: a hash of the conversation's lineage, the
  same on every request and after a restart, shared by a parent and its sub-agent under one
  client key, never the client's value; on any other host, none;
- `affinity`: past the router's documented window (`affinity=`), or the window the
  conversation's own returns show;
- `opening-rewritten`: a second conversation of one agent wrote its opening again;
- server-side tool tokens: two identical web-search requests whose bill is mostly search
  results are no miss.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from click.testing import CliRunner

from tests.proxy.test_proxy_fixes import Loopback
from tests.support.fake_api import Clock
from tests.support.wire_servers import WireServer
from warmloop.cli.main import main
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy
from warmloop.proxy.status import STATUS_PATH

NEW = "gpt-5.6-sol"
"""GPT-5.6: a 30-minute TTL, matching through `prompt_cache_key` ("Prompt caching")."""
SYSTEM = "You are the billing team's reviewer. Follow the house rules below. " * 90
"""An opening of about 1,500 tokens."""
TOKENS_PER_CHAR = 0.25


class Billing:
    """Answers each Responses request with the usage the test sets for it: `cached` tokens
    of its prompt read (its prompt priced at a token a four characters, or `billed`)."""

    def __init__(self) -> None:
        self.reads: list[int | None] = []
        self.billed: int | None = None
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        with self.lock:
            n = len(self.bodies)
            self.bodies.append(body)
        size = self.billed or round(len(json.dumps(body)) * TOKENS_PER_CHAR)
        read = self.reads[n] if n < len(self.reads) else 0
        cached = size - 50 if read is None else read
        usage = {
            "input_tokens": size,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": size + 5,
        }
        return httpx2.Response(200, json=response(n, body["model"], usage))


def response(n: int, model: str, usage: dict[str, Any]) -> dict[str, Any]:
    text = {"type": "output_text", "text": f"step {n} done", "annotations": []}
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": f"msg_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [text],
            }
        ],
        "usage": usage,
    }


@pytest.fixture
def billing(wire_server: WireServer) -> Billing:
    handler = Billing()
    wire_server.serve(handler)
    return handler


HANG_GUARD = 600.0
"""Seconds to wait for the proxy to file an answer the client already has (a hang guard
only: it comes at once)."""


def ask(
    proxy: Proxy, turns: int, *, task: str = "Review the invoices module.", **extra: Any
) -> None:
    """A Responses request of one conversation, `turns` steps in, waited on until the proxy
    has filed its answer (and named its miss)."""
    client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
    before = proxy.handled
    items: Any = [{"role": "user", "content": task}]
    for n in range(turns):
        items.append({"role": "assistant", "content": f"Step {n} done."})
        items.append({"role": "user", "content": f"Step {n + 1}: go on."})
    extra.setdefault("model", NEW)
    extra.setdefault("instructions", SYSTEM)
    client.responses.create(input=items, **extra)
    assert proxy.wait_handled(before + 1, HANG_GUARD)


def kinds(page: dict[str, Any]) -> dict[str, int]:
    return {kind: figures["requests"] for kind, figures in page["misses"].items()}


def returns(proxy: Proxy, clock: Clock, gaps: list[float], **extra: Any) -> None:
    """A conversation whose request k + 1 extends request k after `gaps[k]` seconds."""
    ask(proxy, 0, **extra)
    for k, gap in enumerate(gaps):
        clock.advance(gap)
        ask(proxy, k + 1, **extra)


# No key on a model that needs one ---------------------------------------------------------


def test_gpt_5_6_without_a_key_is_named_with_its_dollars_and_warned_of(
    wire_server: WireServer, billing: Billing, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    billing.reads = [0, 0]
    caplog.set_level(logging.WARNING, logger="warmloop.providers.routing")
    with Proxy(wire_server.url, None, fixes=Fixes(), clock=clock).start() as proxy:
        returns(proxy, clock, [120.0])
        page = httpx2.get(f"{proxy.url}{STATUS_PATH}").json()
        port = str(proxy.server.server_address[1])
        printed = CliRunner().invoke(main, ["proxy", "--status", "--port", port])
    assert all("prompt_cache_key" not in body for body in billing.bodies)  # not OpenAI's host
    assert kinds(page) == {"no-cache-key": 1}
    lost = page["misses"]["no-cache-key"]["lost_usd"]
    assert lost > 0
    assert page["by_conversation"][0]["misses"] == page["misses"]
    assert f"misses: no-cache-key 1 (${lost:.4f})" in printed.output
    warned = [r for r in caplog.records if "prompt_cache_key" in r.getMessage()]
    assert len(warned) == 1
    assert "have the client send prompt_cache_key" in warned[0].getMessage()


def test_with_the_clients_key_the_same_miss_is_not_the_keys(
    wire_server: WireServer, billing: Billing
) -> None:
    clock = Clock()
    billing.reads = [0, 0]
    with Proxy(wire_server.url, None, fixes=Fixes(), clock=clock).start() as proxy:
        returns(proxy, clock, [120.0], prompt_cache_key="session-1")
        assert kinds(proxy.status()) == {"evicted": 1}


# The key the proxy adds -------------------------------------------------------------------


def on_openai(wire_server: WireServer, clock: Clock) -> Proxy:
    transport = Loopback(wire_server.url)
    return Proxy("https://api.openai.com", None, fixes=Fixes(), clock=clock, transport=transport)


def test_the_key_added_on_openais_host_is_the_lineages_hash_and_outlives_a_restart(
    wire_server: WireServer, billing: Billing
) -> None:
    clock = Clock()
    billing.reads = [0, 0, None]
    with on_openai(wire_server, clock).start() as proxy:
        returns(proxy, clock, [120.0])
        assert kinds(proxy.status()) == {"evicted": 1}  # keyed: never `no-cache-key`
    with on_openai(wire_server, clock).start() as restarted:
        ask(restarted, 2)  # the conversation goes on after the proxy restarted
    keys = [body["prompt_cache_key"] for body in billing.bodies]
    assert keys[0].startswith("wl-")
    assert len(keys[0]) == 19
    assert keys == [keys[0]] * 3


def test_a_parent_and_its_sub_agent_share_the_key_of_their_lineage_not_its_value(
    wire_server: WireServer, billing: Billing
) -> None:
    clock = Clock()
    with on_openai(wire_server, clock).start() as proxy:
        ask(proxy, 0, user="tenant-7-secret")
        ask(proxy, 0, user="tenant-7-secret", instructions="You review one file.")
        ask(proxy, 0, user="tenant-8")
        ask(proxy, 0, task="Review the refunds module.")
    keys = [body["prompt_cache_key"] for body in billing.bodies]
    assert keys[0] == keys[1]  # one lineage: the sub-agent reads what its parent wrote
    assert len(set(keys)) == 3
    assert all("tenant" not in key for key in keys)


# Affinity shorter than the TTL ------------------------------------------------------------


def test_a_miss_past_the_routers_documented_window_is_its_affinity(
    wire_server: WireServer, billing: Billing
) -> None:
    clock = Clock()
    billing.reads = [0, 0]
    proxy = Proxy(wire_server.url, None, fixes=Fixes(), clock=clock, affinity=300.0)
    with proxy.start():
        returns(proxy, clock, [600.0], prompt_cache_key="s1")
        page = proxy.status()
    assert kinds(page) == {"affinity": 1}
    assert page["misses"]["affinity"]["lost_usd"] > 0


def test_an_affinity_window_the_conversations_own_gaps_show_is_named(
    wire_server: WireServer, billing: Billing
) -> None:
    """Every return after ten minutes or more missed, every one after a minute or less read,
    inside GPT-5.6's 30-minute TTL: the router's affinity, not evictions."""
    clock = Clock()
    billing.reads = [0, None, None, 0, None, 0]
    with Proxy(wire_server.url, None, fixes=Fixes(), clock=clock).start() as proxy:
        returns(proxy, clock, [30.0, 40.0, 700.0, 30.0, 800.0], prompt_cache_key="s1")
        assert kinds(proxy.status()) == {"affinity": 2}


# A shared opening written again -----------------------------------------------------------


def test_a_second_conversation_writing_the_shared_opening_again_is_named(
    wire_server: WireServer, billing: Billing
) -> None:
    clock = Clock()
    billing.reads = [0, 0]
    with Proxy(wire_server.url, None, fixes=Fixes(), clock=clock).start() as proxy:
        ask(proxy, 0, prompt_cache_key="parent")
        clock.advance(60.0)
        ask(proxy, 0, task="Review the refunds module.", prompt_cache_key="child")
        page = proxy.status()
    assert kinds(page) == {"opening-rewritten": 1}
    assert page["misses"]["opening-rewritten"]["lost_usd"] > 0


def test_a_second_conversation_that_read_the_opening_is_no_miss(
    wire_server: WireServer, billing: Billing
) -> None:
    clock = Clock()
    billing.reads = [0, None]
    with Proxy(wire_server.url, None, fixes=Fixes(), clock=clock).start() as proxy:
        ask(proxy, 0, prompt_cache_key="parent")
        clock.advance(60.0)
        ask(proxy, 0, task="Review the refunds module.", prompt_cache_key="child")
        assert kinds(proxy.status()) == {}


# Server-side tool tokens ------------------------------------------------------------------


def test_identical_web_searches_billed_for_their_results_are_no_miss(
    wire_server: WireServer, billing: Billing
) -> None:
    """pydantic-ai's recorded gpt-5.2 pair: the same request twice, 8,530 tokens billed,
    mostly the search results, none cached: the request text is some 60 tokens."""
    clock = Clock()
    billing.billed = 8_530
    search: Any = [{"type": "web_search"}]
    with Proxy(wire_server.url, None, fixes=Fixes(), clock=clock).start() as proxy:
        for _ in range(2):
            ask(proxy, 0, model="gpt-5.2", instructions="Search the web.", tools=search)
            clock.advance(5.0)
        assert kinds(proxy.status()) == {}


# Explicit caching: the markers as they went --------------------------------------------


def test_a_messages_miss_under_the_proxys_own_breakpoints_is_no_marker_miss(
    wire_server: WireServer,
) -> None:
    """The client sends no `cache_control`; the proxy places the breakpoints. Its second
    request, 2 minutes on, inside Claude's 5-minute TTL, reads nothing though the first
    wrote its whole prompt (some 3,000 tokens, past Sonnet 4.6's 2,048 minimum): evicted,
    never "no cache marker" (the markers are read from the body as it went upstream)."""
    usages = [
        {"input_tokens": 10, "cache_creation_input_tokens": 3_100, "output_tokens": 5},
        {"input_tokens": 10, "cache_creation_input_tokens": 3_130, "output_tokens": 5},
    ]
    bodies: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        n = len(bodies) - 1
        text = {"type": "text", "text": f"step {n} done"}
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [text],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": usages[n],
            },
        )

    wire_server.serve(answer)
    clock = Clock()
    with Proxy(wire_server.url, None, fixes=Fixes(), clock=clock).start() as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
        messages: Any = [{"role": "user", "content": "Review the invoices module."}]
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=64, system=SYSTEM * 2, messages=messages
        )
        assert proxy.wait_handled(1, HANG_GUARD)
        clock.advance(120.0)
        messages += [
            {"role": "assistant", "content": "Step 0 done."},
            {"role": "user", "content": "Step 1: go on."},
        ]
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=64, system=SYSTEM * 2, messages=messages
        )
        assert proxy.wait_handled(2, HANG_GUARD)
        page = proxy.status()
    assert "cache_control" in json.dumps(bodies[1])  # the proxy's own markers
    assert kinds(page) == {"evicted": 1}
