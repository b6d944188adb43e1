"""The status page: per conversation its reuse and what the breakpoints the proxy placed
saved, against the same requests paying their whole prompt (Anthropic caches nothing
without a marker, "Prompt caching > How prompt caching works"); `warmloop proxy --status`
prints it."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
from click.testing import CliRunner

from tests.support.wire_servers import WireServer
from warmloop.cli.main import main
from warmloop.facts.price_table import prices_for
from warmloop.facts.usage import Usage
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy
from warmloop.proxy.status import STATUS_PATH

USAGES = [
    {"input_tokens": 10, "cache_creation_input_tokens": 1000, "output_tokens": 5},
    {
        "input_tokens": 10,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 50,
        "output_tokens": 5,
    },
]
"""What the upstream reports ("Messages > usage"): a write, then a read of it."""


class Answering:
    """Answers request n with USAGES[n]."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        n, self.count = self.count, self.count + 1
        return reply(n)


def reply(n: int) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": f"step {n} done"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": USAGES[n],
        },
    )


def converse(base: str) -> None:
    client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    messages: Any = [{"role": "user", "content": "Fix the parser's nested brackets."}]
    client.messages.create(
        model="claude-sonnet-4-6", max_tokens=64, system="Be terse.", messages=messages
    )
    messages += [
        {"role": "assistant", "content": "step 0 done"},
        {"role": "user", "content": "Go on."},
    ]
    client.messages.create(
        model="claude-sonnet-4-6", max_tokens=64, system="Be terse.", messages=messages
    )


def expected_saving() -> float:
    prices = prices_for("anthropic:claude-sonnet-4-6")
    assert prices is not None
    rates = prices.rates_for(Usage(input_tokens=2070))
    per_token = 1e-6
    whole = (1010 + 1060) * rates.input
    paid = 20 * rates.input + 1050 * rates.cache_write() + 1000 * rates.cache_read
    return (whole - paid) * per_token


def test_the_status_page_shows_reuse_and_what_the_breakpoints_saved(
    wire_server: WireServer,
) -> None:
    wire_server.serve(Answering())
    with Proxy(wire_server.url, None, fixes=Fixes()).start() as proxy:
        converse(proxy.url)
        page = httpx2.get(f"{proxy.url}{STATUS_PATH}").json()
        printed = CliRunner().invoke(
            main, ["proxy", "--status", "--port", str(proxy.server.server_address[1])]
        )
    assert [path for path, _ in wire_server.received] == ["/v1/messages", "/v1/messages"]
    (row,) = page["by_conversation"]
    assert row["requests"] == 2
    assert row["busts"] == 0
    assert row["prompt_tokens"] == 1010 + 1060
    assert row["reuse"] == round(1000 / 2070, 4)
    assert abs(row["saved_usd"] - expected_saving()) < 1e-6
    assert page["saved_usd"] == row["saved_usd"]
    assert printed.exit_code == 0, printed.output
    assert printed.output.startswith("1 conversations, 2 requests, 0 busts, reuse 48%")


def test_nothing_is_counted_as_saved_with_the_breakpoints_off(
    wire_server: WireServer,
) -> None:
    wire_server.serve(Answering())
    with Proxy(wire_server.url, None, fixes=Fixes(breakpoints=False)).start() as proxy:
        converse(proxy.url)
        page = httpx2.get(f"{proxy.url}{STATUS_PATH}").json()
    assert page["by_conversation"][0]["saved_usd"] is None
    assert page["saved_usd"] == 0


def test_status_without_a_running_proxy_says_how_to_start_one() -> None:
    with Proxy("http://127.0.0.1:9", None) as idle:  # holds a free port, never serves
        port = str(idle.server.server_address[1])
    printed = CliRunner().invoke(main, ["proxy", "--status", "--port", port])
    assert printed.exit_code == 1
    assert "no warmloop proxy answered" in printed.output
